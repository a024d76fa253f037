package spawn

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// Check is one finding of Doctor: what was checked, whether it is ready,
// and a line that says what was found or what to do. It never holds a
// secret's value.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Doctor checks what a run in repoDir would need, without starting one:
// that repoDir is in a git repository, the configuration (configFile, ""
// to look for one), git, the CLIs of the coder and the reviewers (found,
// runnable, their versions against the pinned ones), their credentials
// (present, never printed), that each model API a run would use answers
// (checkReach: one request without credentials, which costs nothing), in
// github mode a GitHub token and its scopes (checkGitHub), whether the
// spawn-shim built with this spawn is beside it, and the isolation a run
// would get. Every check runs, whatever the others found.
func Doctor(ctx context.Context, repoDir, configFile string, env []string) []Check {
	var checks []Check
	add := func(name string, ok bool, format string, args ...any) {
		checks = append(checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	environ := config.ReadEnvironment(env)
	src := config.Source{File: configFile, RepoDir: repoDir, Env: env}
	if repo, err := runs.OpenRepo(ctx, repoDir, env); err != nil {
		add("repository", false, "%v", err)
	} else {
		add("repository", true, "%s", repo.Dir)
		src.Top = repo.WorkTree()
	}
	loaded, err := config.Load(ctx, src)
	cfg := loaded.Config
	switch {
	case err != nil:
		add("config", false, "%v", err)
		cfg = config.Default()
	case len(loaded.Files) == 0:
		add("config", true, "no spawn-team.toml: the built-in defaults apply")
	default:
		add("config", true, "%s", strings.Join(loaded.Files, ", then "))
	}
	for _, n := range loaded.Notes {
		add("config", true, "%s", n)
	}
	if v, err := toolVersion(ctx, "git", env); err != nil {
		add("git", false, "git was not found or does not run (%v); install git", err)
	} else {
		add("git", true, "%s", v)
	}
	reg := runners.NewRegistry()
	checked := map[string]bool{}
	agentCheck := func(role, name string) {
		a, err := reg.Lookup(name)
		if err != nil {
			add(role, false, "%v", err)
			return
		}
		if checked[a.Name()] {
			return
		}
		checked[a.Name()] = true
		in, command := a.Install(), cfg.Runners.Get(a.Name()).Command
		if bin, err := proc.LookPath(command, env); err != nil {
			add(a.Name(), false, "%s", missingCLI(a, command))
		} else {
			v, err := toolVersion(ctx, bin, env)
			switch {
			case err != nil:
				add(a.Name(), false, "%s does not run (%v); reinstall it with `npm install -g %s@%s`", bin, err, in.Package, in.Pinned)
			case cliVersion(v) != in.Pinned:
				add(a.Name(), false, "%s is version %s, spawn is tested with %s; install it with `npm install -g %s@%s`", bin, cliVersion(v), in.Pinned, in.Package, in.Pinned)
			default:
				add(a.Name(), true, "%s %s", bin, in.Pinned)
			}
		}
		p := a.Provider()
		if p.Credential(environ.Providers) != nil {
			add(a.Name()+" login", true, "a credential is set (not shown)")
		} else {
			add(a.Name()+" login", false, "no credential: %s", p.Missing)
		}
		checks = append(checks, checkReach(ctx, a.Name()+" api", p.BaseVar, p.Default, environ.Providers.Get(p.BaseVar)))
	}
	agentCheck("coder", cfg.Team.Coder)
	if cfg.Team.Mode.Reviewed() {
		for _, r := range cfg.Team.Reviewers {
			agentCheck("reviewer", r)
		}
	} else {
		add("reviewers", true, "not needed: mode %s has no reviewer", observability.ModeSolo)
	}
	if cfg.Team.Mode == observability.ModeGitHub {
		checks = append(checks, checkGitHub(ctx, env, environ.GitHub))
	}
	switch own, err := proc.Own(); {
	case err != nil:
		add("spawn-shim", false, "cannot find spawn's own binary: %v", err)
	case proc.IsShim(own):
		add("spawn-shim", true, "%s, built with this spawn, runs its own processes (each agent's reaper and model bridge, the git helper)", own)
	default:
		add("spawn-shim", true, "none built with this spawn beside it: spawn runs itself for its own processes, which then start in about twice the time; `make install` puts spawn and its shim side by side")
	}
	rep := isolation.Probe(ctx, env, environ.TmpDir)
	switch {
	case rep.Mode == isolation.ModeBwrap:
		add("isolation", true, "a run gets bubblewrap (%s)", rep.Bwrap)
	case rep.Mode == isolation.ModeSeatbelt:
		add("isolation", true, "a run gets Seatbelt (%s): the probe ran spawn under its profile, and %s", rep.SandboxExec, probeSummary(rep.Checks))
	case cfg.Sandbox.Isolation == isolation.ModeNone:
		add("isolation", true, "off by configuration ([sandbox] isolation = \"none\"): %s", rep.Reason)
	case len(rep.Checks) > 0:
		add("isolation", false, "a run would stop before it starts an agent: %s (the probe: %s); %s", rep.Reason, probeSummary(rep.Checks), isolation.InstallHint)
	default:
		add("isolation", false, "a run would get no sandbox: %s; %s", rep.Reason, isolation.InstallHint)
	}
	return checks
}

// probeSummary says what the Seatbelt probe's checks found, each as
// "<what>: refused", "<what>: done" or, for a check the sandbox failed,
// "<what>: done, and must be refused" (or the reverse).
func probeSummary(checks []isolation.ProbeCheck) string {
	parts := make([]string, len(checks))
	for i, c := range checks {
		did := c.Allowed == c.Held // the operation happened
		switch {
		case did && c.Held:
			parts[i] = c.What + ": done"
		case c.Held:
			parts[i] = c.What + ": refused"
		case did:
			parts[i] = c.What + ": done, and must be refused"
		default:
			parts[i] = fmt.Sprintf("%s: refused (%s), and must be done", c.What, c.Detail)
		}
	}
	return strings.Join(parts, "; ")
}

// toolVersion runs `bin --version` and returns its first line.
func toolVersion(ctx context.Context, bin string, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := proc.Run(ctx, proc.Cmd{Path: bin, Args: []string{"--version"}, Env: env})
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" {
		return "", fmt.Errorf("%s --version printed nothing", bin)
	}
	return line, nil
}

// cliVersion is the version in a CLI's --version line: its last word
// that starts with a digit ("codex-cli 0.171.0", "2.1.332 (Claude Code)").
func cliVersion(line string) string {
	fields := strings.Fields(line)
	for i := len(fields) - 1; i >= 0; i-- {
		if f := fields[i]; f[0] >= '0' && f[0] <= '9' {
			return f
		}
	}
	return line
}

// githubToken finds the GitHub token spawn would use: given's (the first
// of config.GitHubTokenVars that is set), else what `gh auth token` prints
// when gh is installed in env's PATH and logged in. source names where it
// came from ("GH_TOKEN", "gh auth token"); both are "" when there is none.
func githubToken(ctx context.Context, env []string, given config.GitHubEnv) (token, source string) {
	if given.Token != "" {
		return given.Token, given.TokenSource
	}
	gh, err := proc.LookPath("gh", env)
	if err != nil {
		return "", ""
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := proc.Run(ctx, proc.Cmd{Path: gh, Args: []string{"auth", "token"}, Env: env})
	if t := strings.TrimSpace(string(out)); err == nil && t != "" && !strings.ContainsAny(t, " \n") {
		return t, "gh auth token"
	}
	return "", ""
}

// checkGitHub is doctor's GitHub line: a token is found (never printed)
// and GitHub accepts it, with the scopes it grants (given is what the
// environment says about GitHub; gh runs with env). It asks GET
// /rate_limit of GITHUB_API_URL (https://api.github.com when unset): it
// costs no request of the hour's limit, every kind of token may call it
// (a workflow's GITHUB_TOKEN cannot read /user), and GitHub answers a
// classic token's request with its scopes in X-OAuth-Scopes. A pull
// request needs the repo scope (public_repo for a public repository); a
// fine-grained or app token has no scopes, and its repository
// permissions are checked when a run starts.
func checkGitHub(ctx context.Context, env []string, given config.GitHubEnv) Check {
	const name = "github"
	token, source := githubToken(ctx, env, given)
	if token == "" {
		return Check{Name: name, Detail: "no token: set SPAWN_GITHUB_TOKEN, GITHUB_TOKEN or GH_TOKEN, or log in with `gh auth login`"}
	}
	api := strings.TrimRight(given.APIURL, "/")
	if api == "" {
		api = "https://api.github.com"
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/rate_limit", nil)
	if err != nil {
		return Check{Name: name, Detail: fmt.Sprintf("GITHUB_API_URL=%q is not a URL; fix it or unset it", api)}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", "spawn")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Check{Name: name, Detail: fmt.Sprintf("cannot reach GitHub at %s (%v); check the network, or GITHUB_API_URL", api, err)}
	}
	// The body says nothing the check needs: the status and headers do.
	if err := resp.Body.Close(); err != nil {
		return Check{Name: name, Detail: fmt.Sprintf("cannot read GitHub's answer from %s (%v); check the network", api, err)}
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return Check{Name: name, Detail: fmt.Sprintf("the token from %s was refused by GitHub (401 Bad credentials): it is expired, revoked or mistyped; make a new one, or run `gh auth login`", source)}
	case resp.StatusCode != http.StatusOK:
		return Check{Name: name, Detail: fmt.Sprintf("the GitHub API answered %s for the token from %s; try again, or check GITHUB_API_URL", resp.Status, source)}
	}
	scopes, classic := resp.Header[http.CanonicalHeaderKey("X-OAuth-Scopes")]
	if !classic {
		return Check{Name: name, OK: true, Detail: fmt.Sprintf("a token from %s (not shown), fine-grained or an app's: it has no scopes, and its repository permissions (contents and pull requests: write) are checked when a run starts", source)}
	}
	var granted []string
	for _, s := range strings.Split(strings.Join(scopes, ","), ",") {
		if s = strings.TrimSpace(s); s != "" {
			granted = append(granted, s)
		}
	}
	list := strings.Join(granted, ", ")
	if list == "" {
		list = "none"
	}
	if !slices.Contains(granted, "repo") && !slices.Contains(granted, "public_repo") {
		return Check{Name: name, Detail: fmt.Sprintf("the token from %s has the scopes %s, and pull requests need repo (public_repo for a public repository); add it, or run `gh auth refresh -s repo`", source, list)}
	}
	return Check{Name: name, OK: true, Detail: fmt.Sprintf("a token from %s (not shown) with the scopes %s", source, list)}
}
