package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	gh "github.com/google/go-github/v60/github"
)

// Problem names what a preflight found wrong.
type Problem string

// The problems a *PreflightError reports.
const (
	ProblemNoRemote        Problem = "no-remote"        // the git remote does not exist
	ProblemNotGitHub       Problem = "not-github"       // the remote is not a GitHub repository
	ProblemNoToken         Problem = "no-token"         // no token anywhere
	ProblemUnreachable     Problem = "unreachable"      // the API did not answer
	ProblemBadCredentials  Problem = "bad-credentials"  // 401
	ProblemNoRepository    Problem = "no-repository"    // 404: missing, or private and the token cannot see it
	ProblemCannotPush      Problem = "cannot-push"      // the token has no push permission
	ProblemRateLimited     Problem = "rate-limited"     // a rate limit outlasts the caller's deadline
	ProblemUnexpected      Problem = "unexpected-reply" // GitHub answered something else
	ProblemOtherRepository Problem = "other-repository" // a pull request named in another repository, or not named at all
)

// PreflightError says why spawn cannot work with the repository on GitHub,
// found before anything was created. Sentence is one sentence for the
// user saying what to do; Err, when set, is the underlying cause.
type PreflightError struct {
	Problem  Problem
	Sentence string
	Err      error
}

func (e *PreflightError) Error() string { return e.Sentence }

func (e *PreflightError) Unwrap() error { return e.Err }

// APIError is a call GitHub refused, or that kept failing until spawn gave
// up. Message is GitHub's own message (with its error details), Status
// the HTTP status (0 when no answer came: Err says why).
type APIError struct {
	Op      string // what spawn was doing: "create review on #3"
	Status  int
	Message string
	// DocumentationURL is GitHub's link for the error, when it sent one.
	DocumentationURL string
	// Hint, for refusals with a known remedy, is one sentence saying what
	// to do.
	Hint string
	Err  error
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("github: ")
	b.WriteString(e.Op)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	} else if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// hints are remedies for GitHub refusals, by a part of GitHub's message.
var hints = []struct{ message, hint string }{
	{"GitHub Actions is not permitted to create or approve pull requests",
		`turn on "Allow GitHub Actions to create and approve pull requests" in the repository's Actions settings, or give spawn a personal token`},
	{"GitHub Actions is not permitted to approve pull requests",
		`turn on "Allow GitHub Actions to create and approve pull requests" in the repository's Actions settings, or set SPAWN_GITHUB_REVIEWER_TOKEN to another account's token`},
	{"Bad credentials", "set a valid, unexpired token"},
	{"Resource not accessible by integration", "give the workflow's token the permissions contents: write and pull-requests: write"},
}

func hintFor(msg string) string {
	for _, h := range hints {
		if strings.Contains(msg, h.message) {
			return h.hint
		}
	}
	return ""
}

func (e *APIError) Unwrap() error { return e.Err }

// ErrCannotResolve means the identity may not resolve the review thread
// (viewerCanResolve is false, as for Actions' GITHUB_TOKEN). It is not a
// failure: the caller notes it and carries on.
var ErrCannotResolve = errors.New("this token cannot resolve review threads")

// RateLimitError is a rate limit whose end lies past the caller's
// deadline (or that kept coming back); spawn did not wait it out.
type RateLimitError struct {
	Until   time.Time // zero when unknown
	Message string    // GitHub's
}

func (e *RateLimitError) Error() string {
	if e.Until.IsZero() {
		return "the GitHub rate limit: " + e.Message
	}
	return fmt.Sprintf("the GitHub rate limit lasts until %s, past the deadline: %s", e.Until.UTC().Format(time.RFC3339), e.Message)
}

// apiError turns what go-github (or the GraphQL client) returned into an
// *APIError for op, keeping GitHub's message and hiding tokens.
func (c *Client) apiError(op string, err error) error {
	if err == nil {
		return nil
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return err
	}
	out := &APIError{Op: op, Err: err}
	var er *gh.ErrorResponse
	var rle *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	var rl *RateLimitError
	switch {
	case errors.As(err, &rl):
		out.Message = rl.Error()
	case errors.As(err, &er):
		out.Message = errorMessage(er)
		out.DocumentationURL = er.DocumentationURL
		if er.Response != nil {
			out.Status = er.Response.StatusCode
		}
	case errors.As(err, &rle):
		out.Message = rle.Message
		if rle.Response != nil {
			out.Status = rle.Response.StatusCode
		}
	case errors.As(err, &abuse):
		out.Message = abuse.Message
		if abuse.Response != nil {
			out.Status = abuse.Response.StatusCode
		}
	}
	out.Message = c.redact(out.Message)
	out.Hint = hintFor(out.Message)
	if out.Message == "" {
		out.Err = c.redactErr(err)
	}
	return out
}

// errorMessage is GitHub's message with the details of its errors list.
func errorMessage(er *gh.ErrorResponse) string {
	msg := er.Message
	var details []string
	for _, e := range er.Errors {
		switch {
		case e.Message != "":
			details = append(details, e.Message)
		case e.Field != "":
			details = append(details, fmt.Sprintf("%s %s is %s", e.Resource, e.Field, e.Code))
		}
	}
	if len(details) > 0 {
		msg += ": " + strings.Join(details, "; ")
	}
	return msg
}

// statusOf is the HTTP status an error carries, 0 when none.
func statusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) && ae.Status != 0 {
		return ae.Status
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// uncertain reports whether err leaves unknown whether the request took
// effect: a 5xx, a timeout, a connection dropped, but not a cancelled
// parent context.
func uncertain(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if s := statusOf(err); s != 0 {
		return s >= 500
	}
	var rl *RateLimitError
	if errors.As(err, &rl) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errAttemptTimeout) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// redactedError is an error whose text had tokens in it.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact removes the client's tokens from s.
func (c *Client) redact(s string) string { return redactURLs(redactTokens(s, c.tokens()...)) }

// redactErr returns err, or an error with the same chain whose text hides
// the client's tokens when its text held one.
func (c *Client) redactErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := c.redact(msg); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

// unwrapURLError drops net/http's *url.Error wrapper (its text repeats the
// URL) when it holds one of this package's errors.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		var rl *RateLimitError
		if errors.As(ue.Err, &rl) {
			return rl
		}
	}
	return err
}

// errorsAsAPI is errors.As for *APIError.
func errorsAsAPI(err error) (*APIError, bool) {
	var ae *APIError
	ok := errors.As(err, &ae)
	return ae, ok
}
