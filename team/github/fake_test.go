package github

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/githubfake"
	"github.com/infinite-improbability-drive/spawn/internal/testenv"
)

// Identities of the fixture: alice is spawn's identity (write), bob a
// maintainer who reviews, carol can only read, the bot is Actions' token.
const (
	owner      = "acme"
	repoName   = "app"
	aliceToken = "ghp_alice_canary_0123456789"
	bobToken   = "ghp_bob_canary_0123456789"
	carolToken = "ghp_carol_canary_0123456789"
	botToken   = "ghs_actions_canary_0123456789"
)

// fixture is a fake GitHub holding acme/app, seeded from a local clone
// whose origin is the fake's bare repository.
type fixture struct {
	srv   *githubfake.Server
	local string
	env   []string
	ctx   context.Context

	mu    sync.Mutex
	waits []waited
	slept []time.Duration
}

type waited struct {
	d   time.Duration
	why string
}

func newFixture(t *testing.T, opts ...githubfake.RepoOption) *fixture {
	t.Helper()
	srv := githubfake.New(t)
	require.NoError(t, srv.AddUser("alice", aliceToken, githubfake.PermissionWrite))
	require.NoError(t, srv.AddUser("bob", bobToken, githubfake.PermissionMaintain))
	require.NoError(t, srv.AddUser("carol", carolToken, githubfake.PermissionRead))
	require.NoError(t, srv.AddUser("github-actions[bot]", botToken, githubfake.PermissionWrite, githubfake.ActionsToken()))
	local := testenv.Repo(t)
	testenv.WriteFile(t, local, "app.txt", testenv.Numbered(40))
	testenv.Git(t, local, "add", ".")
	testenv.Git(t, local, "commit", "--quiet", "-m", "app")
	require.NoError(t, srv.AddRepo(owner, repoName, "main", append([]githubfake.RepoOption{githubfake.SeedFrom(local)}, opts...)...))
	testenv.Git(t, local, "remote", "add", "origin", srv.RemoteURL(owner, repoName))
	env := testenv.Env(t, "GITHUB_REPOSITORY="+owner+"/"+repoName, "GITHUB_API_URL="+srv.URL())
	return &fixture{srv: srv, local: local, env: env, ctx: context.Background()}
}

// location is what Locate finds with token in GITHUB_TOKEN (and reviewer,
// when set, as the reviewer token).
func (f *fixture) location(t *testing.T, token, reviewer string) Location {
	t.Helper()
	env := append([]string(nil), f.env...)
	if token != "" {
		env = append(env, "GITHUB_TOKEN="+token)
	}
	if reviewer != "" {
		env = append(env, EnvReviewerToken+"="+reviewer)
	}
	loc, err := Locate(f.ctx, LocateOptions{Dir: f.local, Env: env, Given: given(env)})
	require.NoError(t, err)
	require.Equal(t, f.srv.GraphQLURL(), loc.GraphQLURL)
	return loc
}

// client is a client for token that records its waits and sleeps without
// sleeping; writes are not spaced.
func (f *fixture) client(t *testing.T, token string, opts ...Option) *Client {
	t.Helper()
	return f.clientAt(t, f.location(t, token, ""), opts...)
}

func (f *fixture) clientAt(t *testing.T, loc Location, opts ...Option) *Client {
	t.Helper()
	base := []Option{
		WithMinWriteInterval(0),
		WithWaitReporter(func(d time.Duration, why string) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.waits = append(f.waits, waited{d, why})
		}),
		WithClock(time.Now, func(ctx context.Context, d time.Duration) error {
			f.mu.Lock()
			f.slept = append(f.slept, d)
			f.mu.Unlock()
			return ctx.Err()
		}),
	}
	c, err := New(loc, append(base, opts...)...)
	require.NoError(t, err)
	return c
}

func (f *fixture) recordedWaits() []waited {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]waited(nil), f.waits...)
}

func (f *fixture) repo() git.Repo { return git.Repo{Dir: f.local, Env: f.env} }

// featureBranch commits app.txt with lines 5 and 30 changed (two hunks:
// new lines 2-8 and 27-33) and a new 3-line new.txt on branch "feature",
// pushes it with Push, and returns its head.
func (f *fixture) featureBranch(t *testing.T) string {
	t.Helper()
	testenv.Git(t, f.local, "checkout", "--quiet", "-b", "feature")
	replaceLines(t, f.local, "app.txt", 5, 30)
	testenv.WriteFile(t, f.local, "new.txt", "one\ntwo\nthree\n")
	testenv.Git(t, f.local, "add", ".")
	testenv.Git(t, f.local, "commit", "--quiet", "-m", "feature: change app.txt, add new.txt")
	sha, err := Push(f.ctx, f.repo(), "origin", "feature")
	require.NoError(t, err)
	return sha
}

// openPR opens the draft pull request of feature as alice.
func (f *fixture) openPR(t *testing.T, c *Client) PullRequest {
	t.Helper()
	pr, created, err := c.EnsurePR(f.ctx, NewPR{Head: "feature", Title: "Change app", Body: "The task.", Draft: true})
	require.NoError(t, err)
	require.True(t, created)
	return pr
}

// requireClean fails on any 4xx/5xx the fake answered other than the
// allowed statuses, and on any problem of the fake.
func (f *fixture) requireClean(t *testing.T, allowed ...int) {
	t.Helper()
	require.Empty(t, f.srv.Problems())
	for _, r := range f.srv.Requests() {
		if r.Status >= 400 && !containsInt(allowed, r.Status) {
			t.Errorf("%s %s (%s) answered %d: %s", r.Method, r.Path, r.Operation, r.Status, r.ResponseBody)
		}
	}
}

// writes counts the content-creating requests the fake saw, by operation.
func (f *fixture) writes() map[string]int {
	out := map[string]int{}
	for _, r := range f.srv.Requests() {
		if r.Method == "GET" || (r.Operation == "graphql" && !strings.Contains(string(r.Body), "mutation")) {
			continue
		}
		name := r.Operation
		if name == "graphql" {
			name += " " + strings.Join(r.GraphQLFields, ",")
		}
		out[name]++
	}
	return out
}

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

func replaceLines(t *testing.T, dir, name string, lines ...int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	all := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for _, i := range lines {
		all[i-1] = fmt.Sprintf("changed %d", i)
	}
	testenv.WriteFile(t, dir, name, strings.Join(all, "\n")+"\n")
}

func fmtInt(n int) string { return fmt.Sprint(n) }

// testServer serves h until the test ends and returns its URL.
func testServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

func fmtInt64(n int64) string { return fmt.Sprint(n) }
