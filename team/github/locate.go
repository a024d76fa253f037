package github

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// Environment variables whose values Locate is given (Given).
const (
	EnvRepository    = "GITHUB_REPOSITORY"           // owner/repo, overriding the remote
	EnvAPIURL        = "GITHUB_API_URL"              // REST base
	EnvGraphQLURL    = "GITHUB_GRAPHQL_URL"          // GraphQL endpoint
	EnvToken         = "SPAWN_GITHUB_TOKEN"          // spawn's own token, first choice
	EnvReviewerToken = "SPAWN_GITHUB_REVIEWER_TOKEN" // a second identity that submits reviews
)

// DefaultAPIURL is github.com's REST base.
const DefaultAPIURL = "https://api.github.com"

// DefaultRemote is the git remote spawn pushes to unless told otherwise.
const DefaultRemote = "origin"

// Location says where the repository lives on GitHub and who spawn acts
// as there. Its tokens print as [redacted].
type Location struct {
	Owner string
	Repo  string
	// Remote is the git remote spawn pushes to, RemoteURL its push URL
	// with any credentials in it removed, and Host that URL's host ("" for
	// a local path).
	Remote    string
	RemoteURL string
	Host      string
	// APIURL is the REST base without a trailing slash; GraphQLURL the
	// GraphQL endpoint.
	APIURL     string
	GraphQLURL string
	// Token is the identity spawn pushes and posts as; TokenSource names
	// where it came from (an environment variable or "gh auth token"), ""
	// when there is none.
	Token       Token
	TokenSource string
	// ReviewerToken, when set, is a second identity that submits reviews
	// (so they can approve or request changes on spawn's own PR).
	ReviewerToken Token
}

// Secrets returns the text of every token of the location, for a
// redactor of what spawn writes (the record, logs, transcripts).
func (l Location) Secrets() []string {
	var out []string
	for _, t := range []Token{l.Token, l.ReviewerToken} {
		if t != "" {
			out = append(out, t.Reveal())
		}
	}
	return out
}

// FullName is "owner/repo".
func (l Location) FullName() string { return l.Owner + "/" + l.Repo }

// LocateOptions says where to look.
type LocateOptions struct {
	// Dir is a directory inside the repository's work tree.
	Dir string
	// Remote is the git remote to push to; "" means DefaultRemote.
	Remote string
	// Env is the environment to run git and gh with (never the process's
	// own).
	Env []string
	// Given is what the environment says about GitHub, as the caller read
	// it once.
	Given Given
}

// Given is what the environment says about GitHub: the values of its
// variables as read, "" for one not set.
type Given struct {
	Repository string // EnvRepository
	APIURL     string // EnvAPIURL
	GraphQLURL string // EnvGraphQLURL
	// Token is the first of EnvToken, GITHUB_TOKEN and GH_TOKEN set to
	// more than blanks, trimmed, and TokenSource its name; "" when none
	// is (Locate then asks `gh auth token`).
	Token       string
	TokenSource string
	// ReviewerToken is EnvReviewerToken's.
	ReviewerToken string
}

// Locate finds the repository, the API endpoints and the tokens, without
// calling GitHub. owner/repo come from GITHUB_REPOSITORY, else from the
// remote's push URL (https, ssh:// and scp-like git@host:owner/repo forms,
// on github.com or an Enterprise host). The REST base is GITHUB_API_URL,
// else https://api.github.com for github.com and https://HOST/api/v3 for
// another host; GraphQL is GITHUB_GRAPHQL_URL, else GraphQLURLFor(REST
// base). The token is opts.Given's (the first of SPAWN_GITHUB_TOKEN,
// GITHUB_TOKEN and GH_TOKEN that is set), else what `gh auth token` prints
// when gh is on the PATH of opts.Env; a missing token is not an error here (Preflight
// reports it). A missing remote, or a remote that names no GitHub
// repository when GITHUB_REPOSITORY is not set, is a *PreflightError.
func Locate(ctx context.Context, opts LocateOptions) (Location, error) {
	loc := Location{Remote: opts.Remote}
	if loc.Remote == "" {
		loc.Remote = DefaultRemote
	}
	repo := git.Repo{Dir: opts.Dir, Env: opts.Env}
	raw, err := repo.Run(ctx, "remote", "get-url", "--push", loc.Remote)
	if err != nil {
		if ctx.Err() != nil {
			return Location{}, fmt.Errorf("read remote %s: %w", loc.Remote, ctx.Err())
		}
		var exit *proc.ExitError
		if errors.As(err, &exit) {
			return Location{}, &PreflightError{Problem: ProblemNoRemote, Err: errors.New(redactURLs(exit.Stderr)),
				Sentence: fmt.Sprintf("the repository has no git remote %q: add the GitHub repository as that remote (git remote add %s URL) or name another one in [github] remote", loc.Remote, loc.Remote)}
		}
		return Location{}, fmt.Errorf("read remote %s: %w", loc.Remote, err)
	}
	remote, parsed := ParseRemoteURL(strings.TrimSpace(raw))
	loc.RemoteURL, loc.Host = remote.URL, remote.Host

	loc.APIURL = strings.TrimRight(strings.TrimSpace(opts.Given.APIURL), "/")
	if loc.APIURL == "" {
		loc.APIURL = apiURLForHost(remote.Host)
	}
	loc.GraphQLURL = strings.TrimSpace(opts.Given.GraphQLURL)
	if loc.GraphQLURL == "" {
		loc.GraphQLURL = GraphQLURLFor(loc.APIURL)
	}

	if full := strings.TrimSpace(opts.Given.Repository); full != "" {
		owner, name, ok := splitFullName(full)
		if !ok {
			return Location{}, &PreflightError{Problem: ProblemNotGitHub,
				Sentence: fmt.Sprintf("GITHUB_REPOSITORY is %q, not owner/repo: set it to the repository's owner/name or unset it", full)}
		}
		loc.Owner, loc.Repo = owner, name
	} else if parsed && remoteMatchesAPI(remote.Host, loc.APIURL) {
		loc.Owner, loc.Repo = remote.Owner, remote.Repo
	} else {
		return Location{}, &PreflightError{Problem: ProblemNotGitHub,
			Sentence: fmt.Sprintf("the remote %s (%s) is not a GitHub repository: point [github] remote at a GitHub remote, or set GITHUB_REPOSITORY=owner/repo (and GITHUB_API_URL for GitHub Enterprise)", loc.Remote, loc.RemoteURL)}
	}

	if v := strings.TrimSpace(opts.Given.Token); v != "" {
		loc.Token, loc.TokenSource = Token(v), opts.Given.TokenSource
	}
	if loc.Token == "" {
		tok, err := ghAuthToken(ctx, opts.Env, webHost(loc.APIURL))
		if err != nil {
			return Location{}, err
		}
		if tok != "" {
			loc.Token, loc.TokenSource = tok, "gh auth token"
		}
	}
	loc.ReviewerToken = Token(strings.TrimSpace(opts.Given.ReviewerToken))
	return loc, nil
}

// ghAuthToken asks the gh CLI for its token for host. It returns "" when gh
// is not installed or has no token; only a cancelled ctx is an error.
func ghAuthToken(ctx context.Context, env []string, host string) (Token, error) {
	bin, err := proc.LookPath("gh", env)
	if err != nil {
		return "", nil
	}
	args := []string{"auth", "token"}
	if host != "" {
		args = append(args, "--hostname", host)
	}
	out, err := proc.Run(ctx, proc.Cmd{Path: bin, Args: args, Env: env})
	if ctx.Err() != nil {
		return "", fmt.Errorf("gh auth token: %w", ctx.Err())
	}
	if err != nil {
		return "", nil // not logged in: Preflight says what to do
	}
	return Token(strings.TrimSpace(string(out))), nil
}

// Remote is a git remote URL read as a GitHub repository's address.
type Remote struct {
	// URL is the URL with any user:password removed.
	URL   string
	Host  string // lower case, without a port; "" for a local path
	Owner string
	Repo  string // without ".git"
}

// ParseRemoteURL reads a remote URL: https://host/owner/repo(.git),
// http://, ssh://[user@]host[:port]/owner/repo(.git), git://, and the
// scp-like [user@]host:owner/repo(.git). ok is false when raw names no
// owner/repo on a host (a local path, a URL with another path shape); URL
// is then still raw without credentials.
func ParseRemoteURL(raw string) (r Remote, ok bool) {
	r.URL = redactURLs(raw)
	var host, p string
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return r, false
		}
		switch strings.ToLower(u.Scheme) {
		case "https", "http", "ssh", "git", "git+ssh", "ssh+git":
		default:
			return r, false
		}
		if _, hasPassword := u.User.Password(); u.User != nil && (hasPassword || !strings.Contains(u.Scheme, "ssh")) {
			u.User = nil
			r.URL = u.String()
		}
		host, p = u.Hostname(), u.Path
	} else {
		// scp-like: [user@]host:path, where host holds no slash.
		before, after, found := strings.Cut(raw, ":")
		if !found || strings.Contains(before, "/") || strings.HasPrefix(after, "//") {
			return r, false
		}
		if i := strings.LastIndex(before, "@"); i >= 0 {
			before = before[i+1:]
		}
		if before == "" || len(before) == 1 { // "C:" is a Windows drive, not a host
			return r, false
		}
		host, p = before, after
	}
	r.Host = strings.ToLower(host)
	p = strings.Trim(path.Clean("/"+p), "/")
	owner, name, found := strings.Cut(p, "/")
	name = strings.TrimSuffix(name, ".git")
	if !found || owner == "" || name == "" || strings.Contains(name, "/") {
		return r, false
	}
	r.Owner, r.Repo = owner, name
	return r, true
}

// GraphQLURLFor derives the GraphQL endpoint from a REST base:
// https://api.github.com gives https://api.github.com/graphql, an
// Enterprise https://HOST/api/v3 gives https://HOST/api/graphql, and any
// other base gets "/graphql" appended (the layout of GitHub Enterprise
// Cloud's api.SUBDOMAIN.ghe.com and of spawn's fake).
func GraphQLURLFor(apiURL string) string {
	base := strings.TrimRight(apiURL, "/")
	if strings.HasSuffix(base, "/api/v3") {
		return strings.TrimSuffix(base, "/v3") + "/graphql"
	}
	return base + "/graphql"
}

// apiURLForHost is the REST base of a remote's host: github.com's for
// github.com (and a local path), Enterprise Server's /api/v3 otherwise.
func apiURLForHost(host string) string {
	switch {
	case host == "" || isDotCom(host):
		return DefaultAPIURL
	case strings.HasSuffix(host, ".ghe.com") && !strings.HasPrefix(host, "api."):
		return "https://api." + host
	default:
		return "https://" + host + "/api/v3"
	}
}

func isDotCom(host string) bool {
	switch host {
	case "github.com", "www.github.com", "ssh.github.com":
		return true
	}
	return false
}

// webHost is the host people (and gh) know the API by: github.com for
// api.github.com, HOST for HOST/api/v3 and for api.HOST.
func webHost(apiURL string) string {
	u, err := url.Parse(apiURL)
	if err != nil {
		return ""
	}
	h := strings.ToLower(u.Hostname())
	if h == "api.github.com" {
		return "github.com"
	}
	if strings.HasPrefix(h, "api.") && strings.HasSuffix(h, ".ghe.com") {
		return strings.TrimPrefix(h, "api.")
	}
	return h
}

// remoteMatchesAPI reports whether a remote on host belongs to the GitHub
// whose REST base is apiURL.
func remoteMatchesAPI(host, apiURL string) bool {
	w := webHost(apiURL)
	if isDotCom(host) {
		return w == "github.com"
	}
	return host != "" && host == w
}

func splitFullName(full string) (owner, repo string, ok bool) {
	owner, repo, ok = strings.Cut(full, "/")
	return owner, repo, ok && owner != "" && repo != "" && !strings.Contains(repo, "/")
}

// redactURLs removes user:password from every URL in s (a remote URL, git's
// stderr).
func redactURLs(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		scheme := s[:i]
		if j := strings.LastIndexFunc(scheme, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '+') }); j >= 0 {
			scheme = scheme[j+1:]
		}
		b.WriteString(s[:i+3])
		s = s[i+3:]
		end := strings.IndexAny(s, " \t\n\"'<>")
		if end < 0 {
			end = len(s)
		}
		if at := strings.LastIndex(s[:end], "@"); at >= 0 && !strings.Contains(s[:at], "/") &&
			(strings.Contains(s[:at], ":") || !strings.Contains(strings.ToLower(scheme), "ssh")) {
			b.WriteString(redacted + "@")
			s = s[at+1:]
		}
	}
}
