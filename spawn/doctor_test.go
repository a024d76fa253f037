package spawn

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/githubfake"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
)

// githubEnv is an environment with no GitHub token and no gh on PATH
// (PATH holds only bin, which the test may fill), plus extra.
func githubEnv(t *testing.T, bin string, extra ...string) []string {
	t.Helper()
	return append([]string{"PATH=" + bin, "HOME=" + t.TempDir()}, extra...)
}

func TestDoctorGitHubCheck(t *testing.T) {
	srv := githubfake.New(t)
	require.NoError(t, srv.AddUser("classic", "ghp_classic_canary", githubfake.PermissionWrite, githubfake.Scopes("repo", "workflow")))
	require.NoError(t, srv.AddUser("narrow", "ghp_narrow_canary", githubfake.PermissionWrite, githubfake.Scopes("read:org")))
	require.NoError(t, srv.AddUser("public", "ghp_public_canary", githubfake.PermissionWrite, githubfake.Scopes("public_repo")))
	require.NoError(t, srv.AddUser("finegrained", "github_pat_fine_canary", githubfake.PermissionWrite))
	api := "GITHUB_API_URL=" + srv.URL()
	bin := t.TempDir()

	tests := []struct {
		name   string
		env    []string
		ok     bool
		detail string
	}{
		{"a classic token with repo", []string{api, "GH_TOKEN=ghp_classic_canary"}, true,
			"a token from GH_TOKEN (not shown) with the scopes repo, workflow"},
		{"SPAWN_GITHUB_TOKEN comes first", []string{api, "SPAWN_GITHUB_TOKEN=ghp_classic_canary", "GITHUB_TOKEN=nope", "GH_TOKEN=nope"}, true,
			"a token from SPAWN_GITHUB_TOKEN (not shown) with the scopes repo, workflow"},
		{"public_repo is enough", []string{api, "GITHUB_TOKEN=ghp_public_canary"}, true,
			"a token from GITHUB_TOKEN (not shown) with the scopes public_repo"},
		{"a classic token without repo", []string{api, "GITHUB_TOKEN=ghp_narrow_canary"}, false,
			"the token from GITHUB_TOKEN has the scopes read:org, and pull requests need repo (public_repo for a public repository); add it, or run `gh auth refresh -s repo`"},
		{"a fine-grained token has no scopes", []string{api, "GH_TOKEN=github_pat_fine_canary"}, true,
			"a token from GH_TOKEN (not shown), fine-grained or an app's: it has no scopes, and its repository permissions (contents and pull requests: write) are checked when a run starts"},
		{"a token GitHub refuses", []string{api, "GH_TOKEN=ghp_revoked_canary"}, false,
			"the token from GH_TOKEN was refused by GitHub (401 Bad credentials): it is expired, revoked or mistyped; make a new one, or run `gh auth login`"},
		{"no token and no gh", []string{api}, false,
			"no token: set SPAWN_GITHUB_TOKEN, GITHUB_TOKEN or GH_TOKEN, or log in with `gh auth login`"},
		{"GitHub cannot be reached", []string{"GITHUB_API_URL=http://127.0.0.1:1", "GH_TOKEN=ghp_classic_canary"}, false,
			"cannot reach GitHub at http://127.0.0.1:1 ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := githubEnv(t, bin, tt.env...)
			c := checkGitHub(context.Background(), env, config.ReadEnvironment(env).GitHub)
			assert.Equal(t, "github", c.Name)
			assert.Equal(t, tt.ok, c.OK, c.Detail)
			assert.True(t, strings.HasPrefix(c.Detail, tt.detail), "got %q", c.Detail)
			assert.NotContains(t, c.Detail, "canary", "a token is never printed")
		})
	}
}

// With no variable set, the token gh is logged in with is used, and never
// printed.
func TestDoctorGitHubCheckAsksGh(t *testing.T) {
	srv := githubfake.New(t)
	require.NoError(t, srv.AddUser("classic", "gho_from_gh_canary", githubfake.PermissionWrite, githubfake.Scopes("gist", "read:org", "repo")))
	bin := t.TempDir()
	gh := "#!/bin/sh\n[ \"$1 $2\" = \"auth token\" ] && echo gho_from_gh_canary\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "gh"), []byte(gh), 0o755))
	env := githubEnv(t, bin+string(os.PathListSeparator)+"/bin:/usr/bin", "GITHUB_API_URL="+srv.URL()+"/")
	c := checkGitHub(context.Background(), env, config.ReadEnvironment(env).GitHub)
	assert.True(t, c.OK, c.Detail)
	assert.Equal(t, "a token from gh auth token (not shown) with the scopes gist, read:org, repo", c.Detail)
}

// The GitHub line is there in github mode only.
func TestDoctorChecksGitHubOnlyInGitHubMode(t *testing.T) {
	names := func(env []string) []string {
		var out []string
		for _, c := range Doctor(context.Background(), t.TempDir(), "", env) {
			out = append(out, c.Name)
		}
		return out
	}
	bin := t.TempDir()
	assert.NotContains(t, names(githubEnv(t, bin, "SPAWN_MODE=pingpong")), "github")
	assert.Contains(t, names(githubEnv(t, bin, "SPAWN_MODE=github")), "github")
}
