package prompts

import (
	"encoding/json"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
	"github.com/infinite-improbability-drive/spawn/observability"
)

// CoderReply is the coder's answer to one finding of a fix prompt: what it
// did (observability.CoderFixed or CoderDeclined) and why, in one line.
type CoderReply struct {
	FindingID string                    `json:"finding_id"`
	Action    observability.CoderAction `json:"action"`
	Reason    string                    `json:"reason"`
}

// reviewedNote ends the coder's first prompt when a reviewer will review
// the work.
const reviewedNote = "When you finish, a reviewer from another model family (a different AI model) will review your change, " +
	"reading the files in this worktree, and may ask you to fix what it finds. You may then fix each finding or decline it with a reason."

// Task is the coder's first prompt in a reviewed mode: the task, then a
// paragraph saying that a reviewer from another model family will review
// the work and that findings may be fixed or declined with a reason.
func Task(task string) string {
	return strings.TrimRight(task, "\n") + "\n\n" + reviewedNote + "\n"
}

// Continue is the prompt that resumes a coder turn that was cut off (spawn
// was stopped, killed or timed out, and the run is resumed): it says so,
// says that the worktree holds the work done so far, and repeats the
// turn's prompt.
func Continue(prompt string) string {
	return "Your previous turn was cut off before you finished: spawn was stopped. " +
		"The worktree still holds your work so far, committed. Continue the same work where you left off; " +
		"this was the request:\n\n" + prompt
}

// maxReasonRunes bounds a reply's reason; a longer one is cut with "...".
const maxReasonRunes = 500

// replyLine is one line of the coder-reply contract: a finding id (12 hex
// digits, or the shown form "F-610c", optionally in backticks or bold), a
// separator, fixed or declined, and the reason after an optional separator.
var replyLine = lazy.MustCompile("(?i)(?:^|[^0-9a-z-])(F-[0-9a-f]{4,12}|[0-9a-f]{12})[`*\"']*\\s*(?:[:=>\\-\u2013\u2014]+\\s*)?[`*\"']*(fixed|declined)[`*\"']*\\s*(?:[:\\-\u2013\u2014]+\\s*)?(.*)$")

// ParseCoderReplies reads the coder's replies to the findings with the
// given ids from its final message, leniently: the contract (the Fix prompt
// states it) is one line per finding, "<id>: fixed - <reason>" or
// "<id>: declined - <reason>", but a JSON object anywhere in the message
// (bare or fenced) is read too, either mapping ids to replies
// ({"<id>": {"action": "declined", "reason": "..."}} or
// {"<id>": "declined - reason"}) or holding a "replies" array of
// {"id"|"finding_id", "action", "reason"}. Ids are matched case-insensitively,
// in full or in the form spawn shows ("F-610c", ShortFindingIDs);
// ids not in ids are ignored; when a finding is answered more than once the
// last answer counts. The result is in the order of ids, holds only the
// findings answered, and is never an error: a message that follows no
// contract has no replies, and the loop goes on without them.
func ParseCoderReplies(text string, ids []string) []CoderReply {
	known := make(map[string]bool, len(ids))
	for _, id := range ids {
		known[strings.ToLower(id)] = true
	}
	got := map[string]CoderReply{}
	add := func(id, action, reason string) {
		id = ResolveFindingID(id, ids)
		if !known[id] {
			return
		}
		a := observability.CoderAction(strings.ToLower(strings.TrimSpace(action)))
		if a != observability.CoderFixed && a != observability.CoderDeclined {
			return
		}
		got[id] = CoderReply{FindingID: id, Action: a, Reason: cleanReason(reason)}
	}
	for _, line := range strings.Split(text, "\n") {
		if m := replyLine.FindStringSubmatch(line); m != nil {
			add(m[1], m[2], m[3])
		}
	}
	// A JSON object is the more exact form: its answers replace what the
	// lines of the same object seemed to say.
	for _, region := range regions(text) {
		sc := scanObjects(text[region.start:region.end])
		for _, o := range sc.objects {
			repliesFromJSON(text[region.start+o.start:region.start+o.end], add)
		}
	}
	var out []CoderReply
	seen := map[string]bool{}
	for _, id := range ids {
		id = strings.ToLower(id)
		if r, ok := got[id]; ok && !seen[id] {
			seen[id] = true
			out = append(out, r)
		}
	}
	return out
}

// repliesFromJSON reads the replies of one JSON object, in either form
// ParseCoderReplies accepts; anything else is ignored.
func repliesFromJSON(obj string, add func(id, action, reason string)) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(obj), &m) != nil {
		return
	}
	type entry struct {
		ID        string `json:"id"`
		FindingID string `json:"finding_id"`
		Action    string `json:"action"`
		Reason    string `json:"reason"`
	}
	if raw, ok := m["replies"]; ok {
		var list []entry
		if json.Unmarshal(raw, &list) == nil {
			for _, e := range list {
				id := e.FindingID
				if id == "" {
					id = e.ID
				}
				add(id, e.Action, e.Reason)
			}
		}
	}
	for id, raw := range m {
		var e entry
		var s string
		switch {
		case json.Unmarshal(raw, &e) == nil && e.Action != "":
			add(id, e.Action, e.Reason)
		case json.Unmarshal(raw, &s) == nil:
			action, reason, _ := strings.Cut(strings.TrimSpace(s), " ")
			add(id, strings.Trim(action, ":-,"), strings.TrimLeft(reason, " :-\u2013\u2014"))
		}
	}
}

// cleanReason makes a reason one line of at most maxReasonRunes runes,
// without the markup around it.
func cleanReason(s string) string {
	s = strings.Trim(oneLine(s), "`*\"' ")
	if r := []rune(s); len(r) > maxReasonRunes {
		s = string(r[:maxReasonRunes-3]) + "..."
	}
	return s
}
