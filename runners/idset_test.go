package runners

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzIDSet: an idSet holds exactly the ids added to it, as a map would,
// whatever they look like.
func FuzzIDSet(f *testing.F) {
	f.Add("item_1 item_2 item_1 item_01 item_007 item_7 x 9 item_1_r5 item_1_r6 item_1048576 item_1048575 item_")
	f.Fuzz(func(t *testing.T, ops string) {
		var s idSet
		want := map[string]bool{}
		for _, id := range strings.Fields(ops) {
			// A word seen before is asked about; a new one is added.
			if want[id] != s.has(id) {
				t.Fatalf("has(%q) = %v, want %v after %q", id, !want[id], want[id], ops)
			}
			for _, other := range []string{id + "0", strings.TrimSuffix(id, "1"), "0" + id} {
				if want[other] != s.has(other) {
					t.Fatalf("has(%q) = %v, want %v after %q", other, !want[other], want[other], ops)
				}
			}
			s.add(id)
			want[id] = true
		}
	})
}

// A codex item completed again gives its tool result again, and no second
// tool call, whenever it comes; and what the stream keeps of its items
// stays small however many it has: the ids of the items done are bits.
func TestCodexItemsDoneAreRememberedInLittleMemory(t *testing.T) {
	var events []string
	emit := func(e Event) {
		switch e.Kind {
		case KindToolUse:
			events = append(events, "use "+e.ToolUse.ID)
		case KindToolResult:
			events = append(events, "result "+e.ToolResult.ToolUseID)
		}
	}
	s := codexStream{started: map[string]bool{}}
	item := func(typ, id string) {
		s.line(&codexLine{Type: typ, Item: &codexItem{ID: id, Type: CodexToolCommand, Status: "completed"}}, emit)
	}
	const n = 100_000
	for i := range n {
		id := fmt.Sprintf("item_%d", i)
		item("item.started", id)
		item("item.completed", id)
	}
	assert.Empty(t, s.started, "no item is in flight")
	assert.Len(t, s.completed.bits, 1, "one bitmap holds item_0 to item_%d", n-1)
	assert.Empty(t, s.completed.other)
	require.Len(t, events, 2*n)

	events = nil
	for _, id := range []string{"item_5", "item_007", "item_007", "odd", "odd", "item_99999999", "item_99999999"} {
		item("item.completed", id)
	}
	item("item.started", "item_6")
	assert.Equal(t, []string{
		"result item_5",
		"use item_007", "result item_007", "result item_007",
		"use odd", "result odd", "result odd",
		"use item_99999999", "result item_99999999", "result item_99999999",
	}, events)
}
