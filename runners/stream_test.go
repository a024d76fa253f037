package runners

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// streamParser is the Parse method of either runner.
type streamParser func(io.Reader, func(Event)) error

// parsers returns both runners' parsers with, for each, a huge tool result
// line and a final result line in its CLI's format.
func parsers() []struct {
	name       string
	parse      streamParser
	hugeLine   func(content string) string
	resultLine string
} {
	return []struct {
		name       string
		parse      streamParser
		hugeLine   func(content string) string
		resultLine string
	}{
		{
			name:  "claude",
			parse: (&Claude{}).Parse,
			hugeLine: func(content string) string {
				return `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"` + content + `"}]}}`
			},
			resultLine: `{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s","num_turns":2}`,
		},
		{
			name:  "gemini",
			parse: (&Gemini{}).Parse,
			hugeLine: func(content string) string {
				return `{"type":"tool_result","tool_id":"t1","status":"success","output":"` + content + `"}`
			},
			resultLine: `{"type":"result","status":"success","stats":{"input_tokens":1,"output_tokens":2}}`,
		},
	}
}

func TestParseHugeLineThenResultWithoutNewline(t *testing.T) {
	content := strings.Repeat("x", 8<<20)
	for _, p := range parsers() {
		t.Run(p.name, func(t *testing.T) {
			stream := p.hugeLine(content) + "\n" + p.resultLine // no trailing newline
			var events []Event
			// HalfReader makes the buffered reader refill many times.
			r := iotest.HalfReader(strings.NewReader(stream))
			require.NoError(t, p.parse(r, func(e Event) { events = append(events, e) }))
			require.Len(t, events, 2)
			require.Equal(t, KindToolResult, events[0].Kind)
			assert.Equal(t, "t1", events[0].ToolResult.ToolUseID)
			assert.Len(t, events[0].ToolResult.Content.String(), len(content))
			require.Equal(t, KindResult, events[1].Kind)
			assert.Equal(t, "success", events[1].Result.Subtype)
		})
	}
}

func TestParseReturnsReaderError(t *testing.T) {
	boom := errors.New("boom")
	for _, p := range parsers() {
		t.Run(p.name, func(t *testing.T) {
			// A complete line, then the read fails in the middle of the next.
			r := io.MultiReader(
				strings.NewReader(p.hugeLine("before")+"\n"+p.resultLine[:10]),
				iotest.ErrReader(boom),
			)
			var events []Event
			err := p.parse(r, func(e Event) { events = append(events, e) })
			require.ErrorIs(t, err, boom)
			require.Len(t, events, 1, "events before the failure are still emitted")
			assert.Equal(t, "before", events[0].ToolResult.Content.String())
		})
	}
}

func TestParseEmptyAndNoiseOnly(t *testing.T) {
	for _, p := range parsers() {
		t.Run(p.name, func(t *testing.T) {
			var events []Event
			emit := func(e Event) { events = append(events, e) }
			require.NoError(t, p.parse(strings.NewReader(""), emit))
			require.NoError(t, p.parse(strings.NewReader("\n\n   \nnot json\n{broken json\n[1,2]\n"), emit))
			assert.Empty(t, events)
		})
	}
}

// TestParseEmitsOneResultAtMost: a stream with two result lines and
// output between them reports one result, as the last event. For gemini
// what follows the first result line is read but not reported; claude
// reports the turn it starts after its first result (see Claude.Parse) and
// the last result line's result.
func TestParseEmitsOneResultAtMost(t *testing.T) {
	for _, p := range parsers() {
		t.Run(p.name, func(t *testing.T) {
			later := strings.Replace(p.resultLine, `"success"`, `"error"`, 1)
			stream := p.resultLine + "\n" + p.hugeLine("after") + "\n" + later + "\n"
			var events []Event
			require.NoError(t, p.parse(strings.NewReader(stream), func(e Event) { events = append(events, e) }))
			last := events[len(events)-1]
			require.Equal(t, KindResult, last.Kind)
			require.Len(t, ofKind(events, KindResult), 1)
			if p.name == "claude" {
				require.Len(t, events, 2)
				assert.Equal(t, "after", events[0].ToolResult.Content.String())
				assert.Equal(t, "error", last.Result.Subtype)
				assert.Equal(t, 4, last.Result.NumTurns, "the turns of both result lines")
				return
			}
			require.Len(t, events, 1)
			assert.Equal(t, "success", last.Result.Subtype)
		})
	}
}

// A session's text in a Result keeps its last 4 MiB, whole characters, so a
// long session's memory stays flat; a short one is whole.
func TestASessionsTextKeepsItsEnd(t *testing.T) {
	var short sessionText
	short.add(1, "one")
	short.add(1, " more")
	short.add(2, "two")
	if got := short.String(); got != "one more\n\ntwo" {
		t.Fatalf("short text %q", got)
	}
	var long sessionText
	chunk := strings.Repeat("é", 4000) // two bytes each
	for i := range 3000 {
		long.add(i, chunk)
	}
	long.add(3000, "the end")
	got := long.String()
	if len(got) > maxSessionText+100 || !strings.HasSuffix(got, chunk+"\n\nthe end") || !strings.HasPrefix(got, "[spawn: the start of the agent's text is cut here]\n") {
		t.Fatalf("long text: %d bytes, starts %q, ends %q", len(got), got[:80], got[len(got)-20:])
	}
	if !utf8.ValidString(got) {
		t.Fatal("the cut split a character")
	}
	if cap(long.b) > 4*maxSessionText {
		t.Fatalf("the text holds %d bytes", cap(long.b))
	}
}

// A session's text is the whole text's end whatever the sizes of its
// chunks, one longer than what is kept among them: the text written
// whole, then cut once.
func TestASessionsTextIsTheEndOfTheWholeText(t *testing.T) {
	const max = maxSessionText
	type chunk struct {
		turn int
		text string
	}
	ascii := func(n int) string { return strings.Repeat("a", n) }
	check := func(name string, chunks []chunk) {
		t.Helper()
		var text sessionText
		var whole strings.Builder
		for i, c := range chunks {
			if i > 0 && c.turn != chunks[i-1].turn && whole.Len() > 0 {
				whole.WriteString("\n\n")
			}
			whole.WriteString(c.text)
			text.add(c.turn, c.text)
		}
		want := whole.String()
		if len(want) > max {
			want = "[spawn: the start of the agent's text is cut here]\n" + string(tail([]byte(want), max))
		}
		if got := text.String(); got != want {
			t.Fatalf("%s: %d bytes, starting %q, want %d, starting %q", name, len(got), got[:min(len(got), 60)], len(want), want[:min(len(want), 60)])
		}
		if len(text.b) > 2*max {
			t.Fatalf("%s: the text holds %d bytes", name, len(text.b))
		}
	}
	check("exactly the limit", []chunk{{1, ascii(max)}})
	check("the limit with a blank line", []chunk{{1, "x"}, {2, ascii(max - 3)}})
	check("a byte over it", []chunk{{1, "x"}, {1, ascii(max)}})
	check("a byte over it, blank line", []chunk{{1, "x"}, {2, ascii(max - 2)}})
	check("cut inside a character", []chunk{{1, "éé"}, {1, ascii(max - 1)}})
	check("cut inside a blank line", []chunk{{1, "x"}, {2, ascii(max - 1)}})
	check("a chunk over it", []chunk{{1, "x"}, {1, "é" + ascii(max)}})
	check("a chunk just over it, alone", []chunk{{1, "é" + ascii(max-1)}})
	check("a chunk over it, alone", []chunk{{1, "é" + ascii(max)}})
	check("after a chunk over it", []chunk{{1, ascii(3 * max)}, {2, "y"}, {2, "z"}})

	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 3, 1000, 64 << 10, max - 1, max, max + 1, 3 * max}
	for trial := range 30 {
		var chunks []chunk
		turn := 0
		for range rng.IntN(12) {
			if rng.IntN(3) == 0 {
				turn++
			}
			n := sizes[rng.IntN(len(sizes))]
			if rng.IntN(2) == 0 {
				n = rng.IntN(max / 2)
			}
			// Characters of 1, 2 and 3 bytes, the last one cut.
			chunks = append(chunks, chunk{turn, strings.Repeat("aé€", n/6+1)[:n]})
		}
		check(fmt.Sprintf("trial %d", trial), chunks)
	}
}
