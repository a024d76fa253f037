package github

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/testenv"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
)

func TestParseRemoteURL(t *testing.T) {
	tests := []struct {
		raw, host, owner, repo, url string
		ok                          bool
	}{
		{raw: "https://github.com/acme/app.git", host: "github.com", owner: "acme", repo: "app", ok: true},
		{raw: "https://github.com/acme/app", host: "github.com", owner: "acme", repo: "app", ok: true},
		{raw: "https://github.com/acme/app/", host: "github.com", owner: "acme", repo: "app", ok: true},
		{raw: "http://GitHub.com/acme/app.git", host: "github.com", owner: "acme", repo: "app", ok: true},
		{raw: "https://x-access-token:s3cret@github.com/acme/app.git", host: "github.com", owner: "acme", repo: "app", ok: true, url: "https://github.com/acme/app.git"},
		{raw: "https://s3cret@github.com/acme/app.git", host: "github.com", owner: "acme", repo: "app", ok: true, url: "https://github.com/acme/app.git"},
		{raw: "ssh://git@github.com/acme/app.git", host: "github.com", owner: "acme", repo: "app", ok: true},
		{raw: "ssh://git@ssh.github.com:443/acme/app.git", host: "ssh.github.com", owner: "acme", repo: "app", ok: true},
		{raw: "git@github.com:acme/app.git", host: "github.com", owner: "acme", repo: "app", ok: true},
		{raw: "git@github.com:acme/app", host: "github.com", owner: "acme", repo: "app", ok: true},
		{raw: "org-123@github.com:acme/app.git", host: "github.com", owner: "acme", repo: "app", ok: true},
		{raw: "github.com:acme/app.git", host: "github.com", owner: "acme", repo: "app", ok: true},
		{raw: "git://github.com/acme/app.git", host: "github.com", owner: "acme", repo: "app", ok: true},
		{raw: "https://ghe.corp.example/platform/tools.git", host: "ghe.corp.example", owner: "platform", repo: "tools", ok: true},
		{raw: "git@ghe.corp.example:platform/tools.git", host: "ghe.corp.example", owner: "platform", repo: "tools", ok: true},
		{raw: "https://octo.ghe.com/acme/app.git", host: "octo.ghe.com", owner: "acme", repo: "app", ok: true},
		{raw: "/srv/git/app.git"},
		{raw: "../app.git"},
		{raw: "file:///srv/git/acme/app.git"},
		{raw: "C:/repos/app"},
		{raw: "https://github.com/acme"},
		{raw: "https://github.com/acme/app/tree/main"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			r, ok := ParseRemoteURL(tt.raw)
			require.Equal(t, tt.ok, ok)
			if !ok {
				return
			}
			assert.Equal(t, tt.host, r.Host)
			assert.Equal(t, tt.owner, r.Owner)
			assert.Equal(t, tt.repo, r.Repo)
			want := tt.url
			if want == "" {
				want = tt.raw
			}
			assert.Equal(t, want, r.URL)
			assert.NotContains(t, r.URL, "s3cret")
		})
	}
}

func TestGraphQLURLFor(t *testing.T) {
	assert.Equal(t, "https://api.github.com/graphql", GraphQLURLFor("https://api.github.com"))
	assert.Equal(t, "https://api.github.com/graphql", GraphQLURLFor("https://api.github.com/"))
	assert.Equal(t, "https://ghe.corp/api/graphql", GraphQLURLFor("https://ghe.corp/api/v3"))
	assert.Equal(t, "https://ghe.corp/api/graphql", GraphQLURLFor("https://ghe.corp/api/v3/"))
	assert.Equal(t, "https://api.octo.ghe.com/graphql", GraphQLURLFor("https://api.octo.ghe.com"))
	assert.Equal(t, "http://127.0.0.1:4000/graphql", GraphQLURLFor("http://127.0.0.1:4000"))
}

func TestRedactURLs(t *testing.T) {
	assert.Equal(t, "fatal: unable to access 'https://[redacted]@github.com/a/b.git/': 403",
		redactURLs("fatal: unable to access 'https://x-access-token:ghs_abc@github.com/a/b.git/': 403"))
	assert.Equal(t, "ssh://git@github.com/a/b", redactURLs("ssh://git@github.com/a/b"))
	assert.Equal(t, "no url here", redactURLs("no url here"))
}

func TestTokenNeverPrints(t *testing.T) {
	tok := Token("ghp_canary0123456789")
	loc := Location{Owner: "o", Repo: "r", Token: tok, ReviewerToken: tok}
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%s %v %q %+v %#v", tok, tok, tok, loc, loc)} {
		assert.NotContains(t, s, tok.Reveal())
	}
	data, err := tok.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "[redacted]", string(data))
	assert.Equal(t, "", Token("").String())
}

// locateRepo is a repository whose origin is remote.
func locateRepo(t *testing.T, remote string) string {
	t.Helper()
	dir := testenv.Repo(t)
	if remote != "" {
		testenv.Git(t, dir, "remote", "add", "origin", remote)
	}
	return dir
}

// given is what spawn reads of env about GitHub (config.ReadEnvironment),
// as Locate is given it.
func given(env []string) Given { return Given(config.ReadEnvironment(env).GitHub) }

func TestLocate(t *testing.T) {
	ctx := context.Background()
	base := func(extra ...string) []string { return testenv.Env(t, extra...) }
	tests := []struct {
		name, remote string
		env          []string
		want         Location
		problem      Problem
	}{
		{name: "github.com over https", remote: "https://github.com/acme/app.git", env: base("GITHUB_TOKEN=t1"),
			want: Location{Owner: "acme", Repo: "app", Host: "github.com", APIURL: DefaultAPIURL, GraphQLURL: "https://api.github.com/graphql", Token: "t1", TokenSource: "GITHUB_TOKEN"}},
		{name: "github.com over ssh, token order", remote: "git@github.com:acme/app.git", env: base("GH_TOKEN=t3", "GITHUB_TOKEN=t2", "SPAWN_GITHUB_TOKEN=t1", "SPAWN_GITHUB_REVIEWER_TOKEN=r1"),
			want: Location{Owner: "acme", Repo: "app", Host: "github.com", APIURL: DefaultAPIURL, GraphQLURL: "https://api.github.com/graphql", Token: "t1", TokenSource: "SPAWN_GITHUB_TOKEN", ReviewerToken: "r1"}},
		{name: "enterprise host", remote: "git@ghe.corp:platform/tools.git", env: base("GH_TOKEN=t3"),
			want: Location{Owner: "platform", Repo: "tools", Host: "ghe.corp", APIURL: "https://ghe.corp/api/v3", GraphQLURL: "https://ghe.corp/api/graphql", Token: "t3", TokenSource: "GH_TOKEN"}},
		{name: "enterprise with GITHUB_API_URL", remote: "https://ghe.corp/platform/tools", env: base("GITHUB_API_URL=https://ghe.corp/api/v3/", "GITHUB_TOKEN=t"),
			want: Location{Owner: "platform", Repo: "tools", Host: "ghe.corp", APIURL: "https://ghe.corp/api/v3", GraphQLURL: "https://ghe.corp/api/graphql", Token: "t", TokenSource: "GITHUB_TOKEN"}},
		{name: "GITHUB_REPOSITORY and URLs override a local remote", remote: "/srv/git/app.git",
			env:  base("GITHUB_REPOSITORY=acme/app", "GITHUB_API_URL=http://127.0.0.1:9", "GITHUB_GRAPHQL_URL=http://127.0.0.1:9/gql", "GITHUB_TOKEN=t"),
			want: Location{Owner: "acme", Repo: "app", APIURL: "http://127.0.0.1:9", GraphQLURL: "http://127.0.0.1:9/gql", Token: "t", TokenSource: "GITHUB_TOKEN"}},
		{name: "no token is not an error here", remote: "https://github.com/acme/app", env: base(),
			want: Location{Owner: "acme", Repo: "app", Host: "github.com", APIURL: DefaultAPIURL, GraphQLURL: "https://api.github.com/graphql"}},
		{name: "a local remote is not on GitHub", remote: "/srv/git/app.git", env: base(), problem: ProblemNotGitHub},
		{name: "a github.com remote with an enterprise API", remote: "https://github.com/acme/app", env: base("GITHUB_API_URL=https://ghe.corp/api/v3"), problem: ProblemNotGitHub},
		{name: "bad GITHUB_REPOSITORY", remote: "https://github.com/acme/app", env: base("GITHUB_REPOSITORY=acme"), problem: ProblemNotGitHub},
		{name: "no remote", env: base(), problem: ProblemNoRemote},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := locateRepo(t, tt.remote)
			loc, err := Locate(ctx, LocateOptions{Dir: dir, Env: tt.env, Given: given(tt.env)})
			if tt.problem != "" {
				var pe *PreflightError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tt.problem, pe.Problem)
				assert.NotEmpty(t, pe.Sentence)
				return
			}
			require.NoError(t, err)
			tt.want.Remote = DefaultRemote
			if tt.want.RemoteURL == "" {
				tt.want.RemoteURL = tt.remote
			}
			assert.Equal(t, tt.want, loc)
		})
	}
}

func TestLocateAsksGhForAToken(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\n[ \"$1 $2 $3 $4\" = \"auth token --hostname github.com\" ] && echo gho_fromgh && exit 0\nexit 1\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "gh"), []byte(script), 0o755))
	env := testenv.Env(t)
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := locateRepo(t, "git@github.com:acme/app.git")
	loc, err := Locate(context.Background(), LocateOptions{Dir: dir, Env: env, Given: given(env)})
	require.NoError(t, err)
	assert.Equal(t, Token("gho_fromgh"), loc.Token)
	assert.Equal(t, "gh auth token", loc.TokenSource)

	// gh without a login leaves the token empty.
	require.NoError(t, os.WriteFile(filepath.Join(bin, "gh"), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	loc, err = Locate(context.Background(), LocateOptions{Dir: dir, Env: env, Given: given(env)})
	require.NoError(t, err)
	assert.Empty(t, loc.Token)
}

func TestLocateUsesTheNamedRemote(t *testing.T) {
	dir := locateRepo(t, "https://github.com/acme/app.git")
	testenv.Git(t, dir, "remote", "add", "upstream", "https://github.com/other/app.git")
	testenv.Git(t, dir, "remote", "set-url", "--push", "upstream", "git@github.com:mine/app.git")
	loc, err := Locate(context.Background(), LocateOptions{Dir: dir, Remote: "upstream", Env: testenv.Env(t), Given: given(testenv.Env(t))})
	require.NoError(t, err)
	assert.Equal(t, "mine/app", loc.FullName(), "the push URL counts")
	assert.Equal(t, "upstream", loc.Remote)
}
