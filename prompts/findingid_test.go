package prompts

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A finding is shown as F- and the fewest digits (at least four) that tell
// it from the run's other findings, and that form is read back.
func TestFindingIDsAreShownShortAndReadBack(t *testing.T) {
	ids := []string{"610c67aec793", "610c99000000", "abcdef012345"}
	short := ShortFindingIDs(ids)
	assert.Equal(t, map[string]string{"610c67aec793": "F-610c6", "610c99000000": "F-610c9", "abcdef012345": "F-abcd"}, short)
	for id, s := range short {
		assert.Equal(t, id, ResolveFindingID(s, ids), "the shown form %s names %s", s, id)
		assert.Equal(t, id, ResolveFindingID(id, ids), "and so does the whole id")
	}
	assert.Equal(t, "abcdef012345", ResolveFindingID("f-ABCD", ids), "in any case")
	assert.Empty(t, ResolveFindingID("F-610c", ids), "a prefix two ids share names none")
	assert.Empty(t, ResolveFindingID("abcd", ids), "a bare prefix is not an id: it could be anything")
	assert.Empty(t, ResolveFindingID("F-ffff", ids))

	replies := ParseCoderReplies("F-abcd: fixed - added the check\n`F-610C9`: declined - out of scope", ids)
	assert.Equal(t, []CoderReply{
		{FindingID: "610c99000000", Action: "declined", Reason: "out of scope"},
		{FindingID: "abcdef012345", Action: "fixed", Reason: "added the check"},
	}, replies)
}
