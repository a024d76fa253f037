package githubfake

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// Permission is a collaborator's role on a repository, as GitHub names it
// in role_name.
type Permission string

// The roles, weakest last. PermissionNone means no access: a private
// repository is then invisible (404).
const (
	PermissionAdmin    Permission = "admin"
	PermissionMaintain Permission = "maintain"
	PermissionWrite    Permission = "write"
	PermissionTriage   Permission = "triage"
	PermissionRead     Permission = "read"
	PermissionNone     Permission = "none"
)

func (p Permission) rank() int {
	switch p {
	case PermissionAdmin:
		return 5
	case PermissionMaintain:
		return 4
	case PermissionWrite:
		return 3
	case PermissionTriage:
		return 2
	case PermissionRead:
		return 1
	default:
		return 0
	}
}

func (p Permission) valid() bool {
	return p == PermissionNone || p.rank() > 0
}

// atLeast reports whether p grants at least q.
func (p Permission) atLeast(q Permission) bool { return p.rank() >= q.rank() }

// legacy is the base role the permission endpoint reports in "permission":
// maintain shows as write and triage as read.
func (p Permission) legacy() string {
	switch p {
	case PermissionMaintain:
		return "write"
	case PermissionTriage:
		return "read"
	default:
		return string(p)
	}
}

// account is a user, a bot or an organisation.
type account struct {
	login   string
	id      int64
	nodeID  string
	typ     string // User | Bot | Organization
	token   string
	perm    Permission // on every repository unless the repository says otherwise
	actions bool       // a workflow's GITHUB_TOKEN
	limit   int        // primary rate limit per hour
	// scopes are a classic token's OAuth scopes, sent in X-OAuth-Scopes
	// on every response to it; nil for other tokens, which get no header.
	scopes []string
}

// repoState is one repository and everything on it.
type repoState struct {
	owner         *account
	name          string
	id            int64
	nodeID        string
	defaultBranch string
	git           *bareRepo
	private       bool
	actionsPRs    bool // "Allow GitHub Actions to create and approve pull requests"
	perms         map[string]Permission
	created       time.Time
	pushed        time.Time
	nextNumber    int
	pulls         []*pullState
	statuses      map[string][]*statusState // sha -> in creation order
}

func (r *repoState) fullName() string { return r.owner.login + "/" + r.name }

// pullState is one pull request. Its head and base are branch names
// resolved against the bare repository whenever they are read; headSHA
// and baseSHA keep the last values seen (a deleted branch keeps them).
type pullState struct {
	repo                *repoState
	number              int
	id                  int64
	nodeID              string
	title, body         string
	draft               bool
	state               string // open | closed
	author              *account
	headRef, baseRef    string
	headSHA, baseSHA    string
	maintainerCanModify bool
	created, updated    time.Time
	closedAt            time.Time
	reviews             []*reviewState
	comments            []*commentState
	issueComments       []*issueCommentState
	threads             []*threadState
}

// Review states as GitHub reports them.
const (
	stateApproved         = "APPROVED"
	stateChangesRequested = "CHANGES_REQUESTED"
	stateCommented        = "COMMENTED"
	statePending          = "PENDING"
)

// eventState maps a review event onto the state it produces.
var eventState = map[string]string{
	"APPROVE":         stateApproved,
	"REQUEST_CHANGES": stateChangesRequested,
	"COMMENT":         stateCommented,
}

type reviewState struct {
	pull      *pullState
	id        int64
	nodeID    string
	author    *account
	state     string
	body      string
	commitID  string
	created   time.Time
	submitted time.Time
}

// commentState is one review comment. line, startLine and position are
// the values on commitID, the commit the comment was made on; what they
// are on the current head is computed when the comment is read.
type commentState struct {
	pull        *pullState
	review      *reviewState
	id          int64
	nodeID      string
	author      *account
	body        string
	path        string
	commitID    string
	side        string
	startSide   string
	line        int
	startLine   int
	position    int
	diffHunk    string
	subjectType string // line | file
	inReplyTo   *commentState
	thread      *threadState
	created     time.Time
	updated     time.Time
}

type threadState struct {
	pull       *pullState
	id         int64
	nodeID     string
	comments   []*commentState
	resolved   bool
	resolvedBy *account
}

func (t *threadState) root() *commentState { return t.comments[0] }

type issueCommentState struct {
	pull    *pullState
	id      int64
	nodeID  string
	author  *account
	body    string
	created time.Time
	updated time.Time
}

type statusState struct {
	id          int64
	nodeID      string
	sha         string
	state       string
	description *string
	targetURL   *string
	context     string
	creator     *account
	created     time.Time
}

// newID hands out the next id. Every object shares one counter, so an id
// of one kind never names an object of another kind by accident.
func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

// nodeID makes a GraphQL global id in the modern format (PR_kwDO...).
// Clients must treat it as opaque; the fake maps it back through s.nodes.
func (s *Server) nodeID(prefix string, id int64, obj any) string {
	n := prefix + "_kwDO" + strings.TrimRight(base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s%d", prefix, id))), "=")
	s.nodes[n] = obj
	return n
}
