package githubfake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/githubfake"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// Identities of the fixture. alice opens pull requests; bob reviews them;
// carol can only read; the Actions token has write access.
const (
	owner      = "acme"
	repoName   = "app"
	aliceToken = "alice-token"
	bobToken   = "bob-token"
	carolToken = "carol-token"
	botToken   = "actions-token"
)

// fixture is a fake with identities, a repository seeded from a local
// clone, and that clone.
type fixture struct {
	srv   *githubfake.Server
	local string
	ctx   context.Context
}

func newFixture(t *testing.T, opts ...githubfake.RepoOption) *fixture {
	t.Helper()
	srv := githubfake.New(t)
	require.NoError(t, srv.AddUser("alice", aliceToken, githubfake.PermissionWrite))
	require.NoError(t, srv.AddUser("bob", bobToken, githubfake.PermissionMaintain))
	require.NoError(t, srv.AddUser("carol", carolToken, githubfake.PermissionRead))
	require.NoError(t, srv.AddUser("github-actions[bot]", botToken, githubfake.PermissionWrite, githubfake.ActionsToken()))
	local := localRepo(t)
	require.NoError(t, srv.AddRepo(owner, repoName, "main", append([]githubfake.RepoOption{githubfake.SeedFrom(local)}, opts...)...))
	return &fixture{srv: srv, local: local, ctx: context.Background()}
}

// client returns a go-github client (the client spawn uses) for token.
func (f *fixture) client(t *testing.T, token string) *github.Client {
	t.Helper()
	c := github.NewClient(nil).WithAuthToken(token)
	u, err := url.Parse(f.srv.URL() + "/")
	require.NoError(t, err)
	c.BaseURL = u
	return c
}

// gitEnv keeps the developer's git configuration out of the tests.
func gitEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// templateRepo is made once per test process: every fixture copies it
// instead of running git init, add and commit again.
var templateRepo string

func TestMain(m *testing.M) {
	code, err := runWithTemplate(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func runWithTemplate(m *testing.M) (code int, err error) {
	dir, err := os.MkdirTemp("", "githubfake-template-")
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	for _, args := range [][]string{{"init", "--quiet", "--initial-branch=main"}, {"add", "."}, {"commit", "--quiet", "-m", "initial"}} {
		if args[0] == "add" {
			if err := os.WriteFile(filepath.Join(dir, "app.txt"), []byte(testenv.Numbered(40)), 0o644); err != nil {
				return 0, err
			}
			if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# app\n"), 0o644); err != nil {
				return 0, err
			}
		}
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = gitEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	templateRepo = dir
	return m.Run(), nil
}

// localRepo is a copy of the template: a repository on main with app.txt
// (40 numbered lines) and README.md.
func localRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(templateRepo)))
	return dir
}

// replaceLines rewrites app.txt with line i replaced for each i in lines.
func replaceLines(t *testing.T, dir string, lines ...int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "app.txt"))
	require.NoError(t, err)
	all := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for _, i := range lines {
		all[i-1] = fmt.Sprintf("changed %d", i)
	}
	testenv.WriteFile(t, dir, "app.txt", strings.Join(all, "\n")+"\n")
}

// featureBranch commits changes to app.txt lines 5 and 30 (two hunks) and
// a new file on branch "feature", pushes it, and returns its head.
func (f *fixture) featureBranch(t *testing.T) string {
	t.Helper()
	git(t, f.local, "checkout", "--quiet", "-b", "feature")
	replaceLines(t, f.local, 5, 30)
	testenv.WriteFile(t, f.local, "new.txt", "one\ntwo\nthree\n")
	git(t, f.local, "add", ".")
	git(t, f.local, "commit", "--quiet", "-m", "feature: change app.txt, add new.txt")
	f.push(t, "feature")
	return git(t, f.local, "rev-parse", "HEAD")
}

func (f *fixture) push(t *testing.T, branch string) {
	t.Helper()
	git(t, f.local, "push", "--quiet", f.srv.RemoteURL(owner, repoName), branch)
}

// openPR opens a draft pull request from feature as alice.
func (f *fixture) openPR(t *testing.T) *github.PullRequest {
	t.Helper()
	pr, _, err := f.client(t, aliceToken).PullRequests.Create(f.ctx, owner, repoName, &github.NewPullRequest{
		Title: github.String("Change app"), Head: github.String("feature"), Base: github.String("main"),
		Body: github.String("Body"), Draft: github.Bool(true),
	})
	require.NoError(t, err)
	return pr
}

// rawResponse is an HTTP answer read whole.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

func (r rawResponse) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

// do sends a raw request (for what go-github hides: exact bodies, headers).
func (f *fixture) do(t *testing.T, token, method, path string, body any) rawResponse {
	t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		data, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, f.srv.URL()+path, rd)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	require.NoError(t, err)
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: buf.Bytes()}
}

// graphql posts a GraphQL operation and decodes the answer.
func (f *fixture) graphql(t *testing.T, token, query string, vars map[string]any) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.GraphQLURL(), nil)
	require.NoError(t, err)
	data, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	require.NoError(t, err)
	req.Body = httpBody(data)
	req.ContentLength = int64(len(data))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	var m map[string]any
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m))
	return resp.StatusCode, m
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func httpBody(b []byte) readCloser { return readCloser{bytes.NewReader(b)} }

// dig walks a decoded JSON document by keys and indexes.
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "at %q: %T is not an object", k, v)
			v = m[k]
		case int:
			l, ok := v.([]any)
			require.True(t, ok, "at %d: %T is not a list", k, v)
			require.Less(t, k, len(l))
			v = l[k]
		}
	}
	return v
}

// apiError asserts err is a go-github ErrorResponse with status and
// returns it.
func apiError(t *testing.T, err error, status int) *github.ErrorResponse {
	t.Helper()
	require.Error(t, err)
	var er *github.ErrorResponse
	require.ErrorAs(t, err, &er)
	require.Equal(t, status, er.Response.StatusCode, "error: %v", err)
	return er
}

func allowActions() githubfake.RepoOption { return githubfake.AllowActionsPullRequests() }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return string(data)
}
