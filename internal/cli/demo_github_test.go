package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/githubfake"
)

// The demo's repository on its fake GitHub, and spawn's identity there.
const (
	demoOwner = "demo"
	demoName  = "calc"
	demoLogin = "spawn-demo"
	demoToken = "ghp_spawn_demo_token_not_a_secret"
)

// fakeForge is the demo's GitHub in github mode: a fake GitHub in
// root/github holding the demo repository (its origin).
type fakeForge struct{ srv *githubfake.Server }

// Start starts the fake GitHub and returns the variables that point spawn
// at it.
func (f *fakeForge) Start(ctx context.Context, root string, repo git.Repo) ([]string, error) {
	srv, err := githubfake.Start(githubfake.WithDir(filepath.Join(root, "github")))
	if err != nil {
		return nil, fmt.Errorf("demo: start the fake GitHub: %w", err)
	}
	f.srv = srv
	if err := srv.AddUser(demoLogin, demoToken, githubfake.PermissionWrite); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if err := srv.AddRepo(demoOwner, demoName, "main", githubfake.SeedFrom(repo.Dir)); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if _, err := repo.Run(ctx, "remote", "add", "origin", srv.RemoteURL(demoOwner, demoName)); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return []string{"GITHUB_REPOSITORY=" + demoOwner + "/" + demoName, "GITHUB_API_URL=" + srv.URL(), "GITHUB_TOKEN=" + demoToken}, nil
}

// Close stops the fake GitHub.
func (f *fakeForge) Close() {
	if f.srv != nil {
		f.srv.Close()
	}
}

// Describe tells what the run did on the fake GitHub: the pull request,
// its reviews, the replies in its threads, which threads are resolved, and
// the status of its head.
func (f *fakeForge) Describe(w io.Writer) {
	srv := f.srv
	prs := srv.PullRequests(demoOwner, demoName)
	if len(prs) == 0 {
		fmt.Fprintln(w, "\nOn the fake GitHub: no pull request was opened.")
		return
	}
	pr := prs[0]
	state := "ready for review"
	if pr.Draft {
		state = "still a draft"
	}
	fmt.Fprintf(w, "\nOn the fake GitHub (%s): pull request #%d %q from %s into %s, %s.\n", srv.URL(), pr.Number, pr.Title, pr.Head, pr.Base, state)
	for _, r := range srv.Reviews(demoOwner, demoName, pr.Number) {
		if r.Body == "" {
			continue // a reply in a thread is a review of its own, with no body
		}
		fmt.Fprintf(w, "  review %d by %s: %s, %d inline comment(s)\n", r.ID, r.Author, r.State, len(r.CommentIDs))
	}
	for _, c := range srv.ReviewComments(demoOwner, demoName, pr.Number) {
		if c.InReplyTo != 0 {
			fmt.Fprintf(w, "  reply in the thread of %s:%d: %s\n", c.Path, c.Line, firstLine(c.Body))
		}
	}
	for _, t := range srv.Threads(demoOwner, demoName, pr.Number) {
		state := "open"
		if t.Resolved {
			state = "resolved"
		}
		fmt.Fprintf(w, "  thread on %s:%d: %s\n", t.Path, t.Line, state)
	}
	for _, s := range srv.Statuses(demoOwner, demoName, pr.HeadSHA) {
		fmt.Fprintf(w, "  status %s on %.12s: %s (%s)\n", s.Context, s.SHA, s.State, s.Description)
	}
}
