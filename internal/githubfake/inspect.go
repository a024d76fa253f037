package githubfake

import (
	"context"
	"strings"
	"time"
)

// The inspection methods return copies of the server's state for tests to
// assert on. They see everything, pending reviews included.

// PullRequest is a pull request as the server holds it.
type PullRequest struct {
	Number  int
	ID      int64
	NodeID  string
	Title   string
	Body    string
	Draft   bool
	State   string // open | closed
	Author  string
	Head    string // branch
	Base    string // branch
	HeadSHA string // the head branch's commit (its last one if the branch is gone)
	BaseSHA string
	Created time.Time
	Updated time.Time
}

// Review is one review.
type Review struct {
	ID          int64
	NodeID      string
	Author      string
	State       string // APPROVED | CHANGES_REQUESTED | COMMENTED | PENDING
	Body        string
	CommitID    string
	SubmittedAt time.Time // zero while PENDING
	CommentIDs  []int64
}

// ReviewComment is one review comment, with its anchor on the commit it
// was made on.
type ReviewComment struct {
	ID          int64
	NodeID      string
	ReviewID    int64
	InReplyTo   int64 // 0 for a thread's first comment
	ThreadID    string
	Author      string
	Body        string
	Path        string
	Line        int // 0 for a file comment
	StartLine   int // 0 unless multi-line
	Side        string
	StartSide   string
	Position    int
	DiffHunk    string
	CommitID    string
	SubjectType string // line | file
}

// Thread is a review thread (GraphQL's PullRequestReviewThread).
type Thread struct {
	ID         string // PRRT_...
	Path       string
	Line       int // on the commit of its first comment
	Resolved   bool
	ResolvedBy string
	CommentIDs []int64
}

// IssueComment is a comment on the pull request's conversation.
type IssueComment struct {
	ID     int64
	NodeID string
	Author string
	Body   string
}

// Status is one commit status.
type Status struct {
	ID          int64
	SHA         string
	Context     string
	State       string // error | failure | pending | success
	Description string
	TargetURL   string
	Creator     string
	Created     time.Time
}

func (s *Server) pullLocked(owner, repo string, number int) *pullState {
	r := s.repos[strings.ToLower(owner+"/"+repo)]
	if r == nil {
		return nil
	}
	for _, p := range r.pulls {
		if p.number == number {
			return p
		}
	}
	return nil
}

// pullSnapshot re-reads the branches first, so a push the API has not seen
// yet shows; a git failure is reported through errorf. s.mu is held.
func (s *Server) pullSnapshot(p *pullState) PullRequest {
	if err := s.refresh(context.Background(), p); err != nil {
		s.problem("pull request %s#%d: %v", p.repo.fullName(), p.number, err)
	}
	return PullRequest{
		Number: p.number, ID: p.id, NodeID: p.nodeID, Title: p.title, Body: p.body, Draft: p.draft,
		State: p.state, Author: p.author.login, Head: p.headRef, Base: p.baseRef,
		HeadSHA: p.headSHA, BaseSHA: p.baseSHA, Created: p.created, Updated: p.updated,
	}
}

// PullRequests returns the pull requests of owner/repo, by number.
func (s *Server) PullRequests(owner, repo string) []PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PullRequest
	if r := s.repos[strings.ToLower(owner+"/"+repo)]; r != nil {
		for _, p := range r.pulls {
			out = append(out, s.pullSnapshot(p))
		}
	}
	return out
}

// PullRequest returns pull request number of owner/repo, and false when
// there is none.
func (s *Server) PullRequest(owner, repo string, number int) (PullRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullLocked(owner, repo, number)
	if p == nil {
		return PullRequest{}, false
	}
	return s.pullSnapshot(p), true
}

// Reviews returns the reviews of a pull request in creation order.
func (s *Server) Reviews(owner, repo string, number int) []Review {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullLocked(owner, repo, number)
	if p == nil {
		return nil
	}
	var out []Review
	for _, r := range p.reviews {
		rv := Review{ID: r.id, NodeID: r.nodeID, Author: r.author.login, State: r.state, Body: r.body,
			CommitID: r.commitID, SubmittedAt: r.submitted}
		for _, cm := range p.comments {
			if cm.review == r {
				rv.CommentIDs = append(rv.CommentIDs, cm.id)
			}
		}
		out = append(out, rv)
	}
	return out
}

// ReviewComments returns the review comments of a pull request, by id.
func (s *Server) ReviewComments(owner, repo string, number int) []ReviewComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullLocked(owner, repo, number)
	if p == nil {
		return nil
	}
	var out []ReviewComment
	for _, cm := range p.comments {
		rc := ReviewComment{
			ID: cm.id, NodeID: cm.nodeID, ReviewID: cm.review.id, ThreadID: cm.thread.nodeID, Author: cm.author.login,
			Body: cm.body, Path: cm.path, Line: cm.line, StartLine: cm.startLine, Side: cm.side, StartSide: cm.startSide,
			Position: cm.position, DiffHunk: cm.diffHunk, CommitID: cm.commitID, SubjectType: cm.subjectType,
		}
		if cm.inReplyTo != nil {
			rc.InReplyTo = cm.inReplyTo.id
		}
		out = append(out, rc)
	}
	return out
}

// Threads returns the review threads of a pull request in creation order.
func (s *Server) Threads(owner, repo string, number int) []Thread {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullLocked(owner, repo, number)
	if p == nil {
		return nil
	}
	var out []Thread
	for _, t := range p.threads {
		th := Thread{ID: t.nodeID, Path: t.root().path, Line: t.root().line, Resolved: t.resolved}
		if t.resolvedBy != nil {
			th.ResolvedBy = t.resolvedBy.login
		}
		for _, cm := range t.comments {
			th.CommentIDs = append(th.CommentIDs, cm.id)
		}
		out = append(out, th)
	}
	return out
}

// IssueComments returns the conversation comments of a pull request.
func (s *Server) IssueComments(owner, repo string, number int) []IssueComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullLocked(owner, repo, number)
	if p == nil {
		return nil
	}
	var out []IssueComment
	for _, ic := range p.issueComments {
		out = append(out, IssueComment{ID: ic.id, NodeID: ic.nodeID, Author: ic.author.login, Body: ic.body})
	}
	return out
}

// Statuses returns every status of commit sha (a full id) in owner/repo,
// oldest first.
func (s *Server) Statuses(owner, repo, sha string) []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[strings.ToLower(owner+"/"+repo)]
	if r == nil {
		return nil
	}
	var out []Status
	for _, st := range r.statuses[sha] {
		v := Status{ID: st.id, SHA: st.sha, Context: st.context, State: st.state, Creator: st.creator.login, Created: st.created}
		if st.description != nil {
			v.Description = *st.description
		}
		if st.targetURL != nil {
			v.TargetURL = *st.targetURL
		}
		out = append(out, v)
	}
	return out
}
