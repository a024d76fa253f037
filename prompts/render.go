package prompts

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// ReviewInput is what the Review prompt needs.
type ReviewInput struct {
	// Task is the task the coder was given. Required.
	Task string
	// Diff is the diff under review (unified, git diff output). Empty means
	// the coder changed nothing (since the last review, with Delta): the
	// reviewer is asked to judge the repository as it is.
	Diff string
	// Delta says Diff is only what changed since the reviewer's last
	// review; it needs Round >= 2.
	Delta bool
	// OpenFindings are findings still open from earlier rounds; the
	// reviewer must say which are resolved.
	OpenFindings []Finding
	// Domains are the domains to cover: one for a parallel domain
	// reviewer, several for a single reviewer. Required; duplicates are
	// dropped.
	Domains []Domain
	// Round is the 1-based review round.
	Round int
	// CoderSaid is the coder's final message of its last turn; "" leaves it
	// out.
	CoderSaid string
	// Replies are the coder's replies to the open findings (see
	// ParseCoderReplies): each is shown under its finding. Replies to
	// findings not in OpenFindings are left out.
	Replies []CoderReply
	// CoderTests is the last test command the coder ran in its last turn and
	// the end of its output; "" leaves it out.
	CoderTests string
}

// FixInput is what the Fix prompt needs.
type FixInput struct {
	// Task is the task the coder is working on. Required.
	Task string
	// Findings are the findings to fix. At least one is required.
	Findings []Finding
	// Round is the 1-based fix round.
	Round int
}

// Review renders the prompt for a reviewer of the change in in.Diff: its
// role, the domains to cover with their Focus text, the round (round 1:
// review the whole change; Delta: only what changed since the last review,
// with the open findings to resolve or repeat), and the output contract
// that ParseReview checks. The task, the diff, the coder's message and the
// open findings are placed in UNTRUSTED DATA blocks (see Fix). An empty
// task, no domain, an unknown domain, a round below 1, or Delta in round 1
// is an error. An empty diff is not: the reviewer is told the coder changed
// nothing and asked to judge the repository in its working directory.
func Review(in ReviewInput) (string, error) {
	if strings.TrimSpace(in.Task) == "" {
		return "", errors.New("prompts: review: empty task")
	}
	if in.Round < 1 {
		return "", fmt.Errorf("prompts: review: round %d, want 1 or more", in.Round)
	}
	if in.Delta && in.Round == 1 {
		return "", errors.New("prompts: review: a delta review needs an earlier review (round 2 or later)")
	}
	if len(in.Domains) == 0 {
		return "", errors.New("prompts: review: no domain to cover")
	}
	v := reviewView{
		Task:     untrusted(in.Task),
		NoChange: strings.TrimSpace(in.Diff) == "",
		Diff:     untrusted(in.Diff),
		Delta:    in.Delta,
		Round:    in.Round,
		Contract: newContractView(),
	}
	seen := make(map[Domain]bool, len(in.Domains))
	for _, d := range in.Domains {
		if !d.valid() {
			return "", fmt.Errorf("prompts: review: unknown review domain %q", truncate(string(d)))
		}
		if !seen[d] {
			seen[d] = true
			v.Domains = append(v.Domains, domainView{Name: string(d), Focus: d.Focus()})
		}
	}
	if strings.TrimSpace(in.CoderSaid) != "" {
		v.CoderSaid = untrusted(in.CoderSaid)
	}
	if strings.TrimSpace(in.CoderTests) != "" {
		v.CoderTests = untrusted(in.CoderTests)
	}
	v.Open, v.Replied = openViews(in.OpenFindings, in.Replies)
	return render("review", v)
}

// ReReview renders the short prompt for a reviewer's resumed session in
// round in.Round >= 2: the open findings with the coder's replies, the
// coder's message and test run, and the diff since the last review (in.Diff; empty says
// the coder changed nothing), under the same UNTRUSTED DATA rules as Review.
// It does not repeat the instructions, the domains, the task or the output
// contract: the session already holds them from its first prompt (Review),
// and it asks for an answer "under the same contract as before". in.Delta,
// in.Task and in.Domains are not used. A round below 2 is an error.
func ReReview(in ReviewInput) (string, error) {
	if in.Round < 2 {
		return "", fmt.Errorf("prompts: re-review: round %d, want 2 or more", in.Round)
	}
	v := reviewView{NoChange: strings.TrimSpace(in.Diff) == "", Diff: untrusted(in.Diff), Delta: true, Round: in.Round}
	if strings.TrimSpace(in.CoderSaid) != "" {
		v.CoderSaid = untrusted(in.CoderSaid)
	}
	if strings.TrimSpace(in.CoderTests) != "" {
		v.CoderTests = untrusted(in.CoderTests)
	}
	v.Open, v.Replied = openViews(in.OpenFindings, in.Replies)
	return render("rereview", v)
}

// openViews makes the open findings safe to print, each with the coder's
// reply to it when there is one; replied says some finding has one.
func openViews(open []Finding, rs []CoderReply) (views []findingView, replied bool) {
	replies := make(map[string]CoderReply, len(rs))
	for _, r := range rs {
		replies[strings.ToLower(r.FindingID)] = r
	}
	for _, f := range open {
		fv := newFindingView(f)
		if r, ok := replies[strings.ToLower(fv.ID)]; ok {
			fv.Reply = oneLine(neutralise(string(r.Action)))
			if reason := oneLine(neutralise(r.Reason)); reason != "" {
				fv.Reply += ": " + reason
			}
			replied = true
		}
		views = append(views, fv)
	}
	return views, replied
}

// Fix renders the prompt that asks the coder to fix findings in its working
// tree: the task, and each finding with its id (FindingID's when ID is
// empty), severity, domain, file, line, title, detail and suggestion; the coder is to edit the files (not
// only describe a fix), keep the change minimal, run the tests if it can,
// and end its final message with one reply line per finding,
// "<id>: fixed - <what it changed>" or "<id>: declined - <why not>" (the
// contract ParseCoderReplies reads; the reviewer is shown the replies).
//
// In every prompt of this package, text that comes from users, the
// repository or a model (task, diff, findings) is placed between a line
// "<<<UNTRUSTED DATA: name>>>" and a line "<<<END UNTRUSTED DATA: name>>>",
// after a statement that it is data, never instructions; every "<<<" in it
// is broken up ("<< <") so that it can neither close its block nor open a
// new one. An empty task, no finding, or a round below 1 is an error.
func Fix(in FixInput) (string, error) {
	if strings.TrimSpace(in.Task) == "" {
		return "", errors.New("prompts: fix: empty task")
	}
	if len(in.Findings) == 0 {
		return "", errors.New("prompts: fix: no finding to fix")
	}
	if in.Round < 1 {
		return "", fmt.Errorf("prompts: fix: round %d, want 1 or more", in.Round)
	}
	v := fixView{Task: untrusted(in.Task), Round: in.Round}
	for _, f := range in.Findings {
		v.Findings = append(v.Findings, newFindingView(f))
	}
	return render("fix", v)
}

// Repair renders the prompt that asks the reviewer again after its answer
// did not parse: the reason (the Reason of a *ParseError, else the error's
// text) and the output contract again, the same contract block as Review.
// It does not repeat the task or the diff: it is meant for the reviewer's
// resumed session. A nil error is an error.
func Repair(parseErr error) (string, error) {
	if parseErr == nil {
		return "", errors.New("prompts: repair: no parse error to report")
	}
	reason := parseErr.Error()
	var pe *ParseError
	if errors.As(parseErr, &pe) {
		reason = pe.Reason
	}
	reason = strings.TrimRight(oneLine(neutralise(reason)), ".")
	return render("repair", repairView{Reason: reason, Contract: newContractView()})
}

// The views below are all the templates see. Every string in them that
// comes from outside spawn has been through untrusted (block contents) or
// oneLine(neutralise(...)) (single fields).

type reviewView struct {
	Task, Diff string
	NoChange   bool
	CoderSaid  string
	CoderTests string
	Replied    bool // some open finding has the coder's reply
	Delta      bool
	Round      int
	Domains    []domainView
	Open       []findingView
	Contract   contractView
}

type domainView struct{ Name, Focus string }

type fixView struct {
	Task     string
	Round    int
	Findings []findingView
}

type repairView struct {
	Reason   string
	Contract contractView
}

type contractView struct{ Severities, Domains string }

func newContractView() contractView {
	return contractView{
		Severities: severityNames(" | "),
		Domains:    joinDomains(" | "),
	}
}

// findingView is a finding made safe to print inside an UNTRUSTED DATA
// block: single-line fields on one line, Detail and Suggestion indented.
type findingView struct {
	ID, Severity, Domain, File, Title string
	Line                              int
	// Where is "file:line", "file", or "" for a finding without a file.
	Where              string
	Detail, Suggestion string
	// Reply is the coder's reply to the finding ("declined: reason"), or "".
	Reply string
}

// newFindingView makes f safe to print; a finding without an ID gets
// FindingID's.
func newFindingView(f Finding) findingView {
	if f.ID == "" {
		f.ID = FindingID(f.Domain, f.File, f.Title)
	}
	v := findingView{
		ID:         oneLine(neutralise(f.ID)),
		Severity:   oneLine(neutralise(string(f.Severity))),
		Domain:     oneLine(neutralise(f.Domain)),
		File:       oneLine(neutralise(f.File)),
		Title:      oneLine(neutralise(f.Title)),
		Line:       f.Line,
		Detail:     indent(neutralise(f.Detail), "    "),
		Suggestion: indent(neutralise(f.Suggestion), "    "),
	}
	v.Where = v.File
	if v.File != "" && f.Line > 0 {
		v.Where += ":" + strconv.Itoa(f.Line)
	}
	return v
}

// render executes the named template with v.
func render(name string, v any) (string, error) {
	t, err := template.New(name).Option("missingkey=error").ParseFS(templateFS, "templates/*.tmpl")
	if err != nil {
		return "", fmt.Errorf("prompts: %s: parsing templates: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, name+".tmpl", v); err != nil {
		return "", fmt.Errorf("prompts: %s: %w", name, err)
	}
	return b.String(), nil
}

// untrusted prepares text for the inside of an UNTRUSTED DATA block:
// neutralised, and ending in exactly one newline so that the end marker
// stands on a line of its own.
func untrusted(text string) string {
	return strings.TrimRight(neutralise(text), "\n") + "\n"
}

// neutralise breaks up every run of three or more '<' by inserting a
// space before each third '<' ("<<<" becomes "<< <"), so the result holds
// no "<<<" at all and cannot imitate a block marker.
func neutralise(s string) string {
	if !strings.Contains(s, "<<<") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/3)
	run := 0 // '<' written in a row
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '<' {
			if run == 2 {
				b.WriteByte(' ')
				run = 0
			}
			run++
		} else {
			run = 0
		}
		b.WriteByte(c)
	}
	return b.String()
}

// oneLine turns every line break of s (and runs of white space around it)
// into one space, and trims s.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// indent trims s of surrounding blank lines and prefixes each of its lines
// with prefix; "" stays "".
func indent(s, prefix string) string {
	s = strings.Trim(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	if strings.TrimSpace(s) == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(prefix+l, " \t")
	}
	return strings.Join(lines, "\n")
}

// VerifyInput is what the Verify prompt needs.
type VerifyInput struct {
	// Task is what the coder was asked. Required.
	Task string
	// Threads are the review threads the coder addressed, as findings: the
	// id, file, line and title, and in Detail what the thread's trusted
	// reviewers wrote. At least one is required.
	Threads []Finding
	// Said is what the coder's final message says about each thread (see
	// Attribute): each is shown under its thread.
	Said []Attribution
	// CoderSaid is the coder's final message; "" leaves it out.
	CoderSaid string
	// Diff is everything the coder changed ("": nothing).
	Diff string
	// Round is the 1-based check round.
	Round int
}

// Verify renders the prompt that asks a reviewer to check a fix of
// people's review threads (spawn pr) thread by thread, under the
// reviewer's contract (ParseReview reads the answer): the id of each
// thread the change settles goes in "resolved"; each thread still open
// gets a finding whose title begins with its id and whose detail says
// what is missing; problems the change introduces are findings without a
// thread id. The task, the threads, the coder's words and the diff are
// placed in UNTRUSTED DATA blocks (see Fix). An empty task, no thread, or
// a round below 1 is an error.
func Verify(in VerifyInput) (string, error) {
	if strings.TrimSpace(in.Task) == "" {
		return "", errors.New("prompts: verify: empty task")
	}
	if len(in.Threads) == 0 {
		return "", errors.New("prompts: verify: no thread to check")
	}
	if in.Round < 1 {
		return "", fmt.Errorf("prompts: verify: round %d, want 1 or more", in.Round)
	}
	v := verifyView{Task: untrusted(in.Task), NoChange: strings.TrimSpace(in.Diff) == "", Diff: untrusted(in.Diff), Round: in.Round, Contract: newContractView()}
	if strings.TrimSpace(in.CoderSaid) != "" {
		v.CoderSaid = untrusted(in.CoderSaid)
	}
	said := make(map[string]Attribution, len(in.Said))
	for _, a := range in.Said {
		said[strings.ToLower(a.FindingID)] = a
	}
	for _, t := range in.Threads {
		fv := newFindingView(t)
		if a, ok := said[strings.ToLower(fv.ID)]; ok {
			fv.Reply = oneLine(neutralise(a.Words))
			if a.Action != "" {
				fv.Reply = strings.TrimSuffix(string(a.Action)+": "+fv.Reply, ": ")
			}
			v.Replied = v.Replied || fv.Reply != ""
		}
		v.Threads = append(v.Threads, fv)
	}
	return render("verify", v)
}

type verifyView struct {
	Task, Diff string
	NoChange   bool
	CoderSaid  string
	Replied    bool
	Round      int
	Threads    []findingView
	Contract   contractView
}
