package prompts

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/infinite-improbability-drive/spawn/observability"
)

func TestCoderRepliesAreReadLeniently(t *testing.T) {
	a, b := "0252ecbe891c", "ef4653df1eb7"
	ids := []string{a, b}
	declined := func(id, reason string) CoderReply {
		return CoderReply{FindingID: id, Action: observability.CoderDeclined, Reason: reason}
	}
	fixed := func(id, reason string) CoderReply {
		return CoderReply{FindingID: id, Action: observability.CoderFixed, Reason: reason}
	}
	tests := []struct {
		name string
		text string
		want []CoderReply
	}{
		{"the contract's lines", "Done.\n" + a + ": fixed - checked the error\n" + b + ": declined - negative counts are valid in pflag\n",
			[]CoderReply{fixed(a, "checked the error"), declined(b, "negative counts are valid in pflag")}},
		{"markdown around the lines", "- `" + a + "`: **Declined** — out of scope\n* " + b + " - FIXED: added the route",
			[]CoderReply{declined(a, "out of scope"), fixed(b, "added the route")}},
		{"in the order of the ids, whatever the message's order", b + ": fixed - x\n" + a + ": fixed - y",
			[]CoderReply{fixed(a, "y"), fixed(b, "x")}},
		{"the last answer counts", a + ": fixed - first\n" + a + ": declined - changed my mind",
			[]CoderReply{declined(a, "changed my mind")}},
		{"a fenced JSON object of ids", "```json\n{\"" + a + "\": {\"action\": \"declined\", \"reason\": \"valid input\"}, \"" + b + "\": \"fixed - done\"}\n```",
			[]CoderReply{declined(a, "valid input"), fixed(b, "done")}},
		{"a replies array", `{"replies": [{"finding_id": "` + strings.ToUpper(a) + `", "action": "Fixed", "reason": "ok"}]}`,
			[]CoderReply{fixed(a, "ok")}},
		{"unknown ids are ignored", "0123456789ab: fixed - not asked\n" + a + ": declined - no",
			[]CoderReply{declined(a, "no")}},
		{"other actions are ignored", a + ": skipped - later", nil},
		{"prose without the contract has no replies", "I fixed everything, and declined nothing.", nil},
		{"an id inside a longer hex string is not an id", "deadbeef" + a + ": fixed - no", nil},
		{"a reason without a separator", a + " declined", []CoderReply{declined(a, "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ParseCoderReplies(tt.text, ids))
		})
	}
}

func TestACoderReplysReasonIsOneShortLine(t *testing.T) {
	id := "0252ecbe891c"
	got := ParseCoderReplies(id+": declined - "+strings.Repeat("why ", 400), []string{id})
	if assert.Len(t, got, 1) {
		assert.LessOrEqual(t, len([]rune(got[0].Reason)), maxReasonRunes)
		assert.True(t, strings.HasSuffix(got[0].Reason, "..."))
	}
}

func FuzzParseCoderReplies(f *testing.F) {
	id := "0252ecbe891c"
	f.Add(id + ": declined - valid input")
	f.Add("```json\n{\"" + id + "\": {\"action\": \"fixed\", \"reason\": \"done\"}}\n```")
	f.Add(`{"replies": [{"id": "` + id + `", "action": "declined"}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		for _, r := range ParseCoderReplies(text, []string{id}) {
			if r.FindingID != id {
				t.Fatalf("a reply to %q, which was not asked about", r.FindingID)
			}
			if r.Action != observability.CoderFixed && r.Action != observability.CoderDeclined {
				t.Fatalf("action %q", r.Action)
			}
			if strings.Contains(r.Reason, "\n") || len([]rune(r.Reason)) > maxReasonRunes {
				t.Fatalf("reason %q is not one short line", r.Reason)
			}
		}
	})
}
