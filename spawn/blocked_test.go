package spawn

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
)

// TestSandboxRefusalsAreFoundInToolOutput: the lines of a tool's output
// that show the sandbox refused it are found, in any case, and an output
// without one is let through by the quick scan, before any expression runs.
func TestSandboxRefusalsAreFoundInToolOutput(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want []string
	}{
		{"ok\n", nil},
		{"touch: cannot touch '/usr/x': Read-only file system\n", []string{"touch: cannot touch '/usr/x': Read-only file system"}},
		{"mount: /mnt: OPERATION NOT PERMITTED.\nmount: /mnt: operation not permitted.\n", []string{"mount: /mnt: OPERATION NOT PERMITTED.", "mount: /mnt: operation not permitted."}},
		{"open /etc/x: erofs\n  write: EPERM (1)\n", []string{"open /etc/x: erofs", "write: EPERM (1)"}},
		{"the erofsx and epermit words are not errno names", nil},
		{"a read-only file that is fine", nil},
		{strings.Repeat("return read(); operation ", 1000), nil},
	} {
		assert.Equal(t, tc.want, refusals(runners.OutputOf(tc.out)), "%.60q", tc.out)
		if !mayRefuse([]byte(tc.out)) {
			assert.False(t, sandboxRefusal.MatchString(tc.out), "the quick scan let through %.60q, which the expression matches", tc.out)
		}
	}
	assert.False(t, mayRefuse([]byte(strings.Repeat("an ordinary line of test output\n", 100))))
}

// TestRefusalScanMissesNoCaseFold: the quick scan folds ASCII case only,
// which is all sandboxRefusal's (?i) folds in its phrases' starts: no
// letter of them has a fold outside ASCII (as s has ſ and k the Kelvin
// sign).
func TestRefusalScanMissesNoCaseFold(t *testing.T) {
	for _, p := range refusalStarts {
		for _, r := range p {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				assert.Less(t, f, rune(unicode.MaxASCII+1), "%q in %q folds to %q", r, p, f)
			}
		}
	}
	for _, a := range refusalAnchors {
		for _, start := range a.starts {
			assert.Equal(t, a.b|0x20, start[a.at]|0x20, "the anchor of %q", start)
		}
	}
	for _, p := range refusalStarts {
		var cases []byte
		for _, a := range refusalAnchors {
			if slices.Contains(a.starts, p) {
				cases = append(cases, a.b)
			}
		}
		assert.NotEmpty(t, cases, "%q has no anchor", p)
		if c := cases[0]; c|0x20 >= 'a' && c|0x20 <= 'z' {
			assert.ElementsMatch(t, []byte{c | 0x20, c &^ 0x20}, cases, "the anchor of %q in both cases", p)
		}
	}
	for _, s := range []string{"Read-Only File System", "rEaD-oNlY fIlE sYsTeM", "Operation Not Permitted", "EroFS", "ePeRm"} {
		assert.True(t, mayRefuse([]byte("x: "+s)), s)
		assert.True(t, sandboxRefusal.MatchString("x: "+s), s)
	}
}

// A tool call the sandbox refused becomes a sandbox_blocked finding that
// names the call, however many calls the session made before it; a call
// is forgotten once its result came.
func TestARefusedToolCallIsAFindingNamingTheCall(t *testing.T) {
	var events []observability.Event
	r := &run{sb: &sandbox.Sandbox{Path: "/work"}, events: &stream{now: time.Now, sinks: []Sink{SinkFunc(func(e observability.Event) { events = append(events, e) })}}}
	b := &blocked{r: r, who: agent{cli: "claude", role: observability.RoleCoder}}
	for i := range 1000 {
		id := fmt.Sprintf("t%d", i)
		b.event(runners.Event{Kind: runners.KindToolUse, ToolUse: &runners.ToolUse{ID: id, Name: "Bash", Input: json.RawMessage(`{"command":"go test ./..."}`)}})
		b.event(runners.Event{Kind: runners.KindToolResult, ToolResult: &runners.ToolResult{ToolUseID: id, Content: runners.OutputOf("ok")}})
	}
	assert.Empty(t, b.calls, "the calls with a result are forgotten")
	assert.Empty(t, events)

	b.event(runners.Event{Kind: runners.KindToolUse, ToolUse: &runners.ToolUse{ID: "w", Name: "Bash", Input: json.RawMessage(`{"command":"touch /usr/x"}`)}})
	b.event(runners.Event{Kind: runners.KindToolResult, ToolResult: &runners.ToolResult{ToolUseID: "w", Content: runners.OutputOf("touch: cannot touch '/usr/x': Read-only file system\n")}})
	require.Len(t, events, 2)
	require.NotNil(t, events[0].Security)
	assert.Equal(t, observability.FindingSandboxBlocked, events[0].Security.Kind)
	assert.Contains(t, events[0].Security.Description, "Bash `touch /usr/x`: touch: cannot touch '/usr/x': Read-only file system")
}

func BenchmarkMayRefuse(b *testing.B) {
	src, err := os.ReadFile("turn.go") // Go source, as a Read returns it
	require.NoError(b, err)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if mayRefuse(src) {
			b.Fatal("no refusal there")
		}
	}
}

// FuzzMayRefuse: the quick scan says a text may hold a refusal exactly
// when one of refusalStarts is in it, in some mix of ASCII cases, and it
// never lets through a text sandboxRefusal matches.
func FuzzMayRefuse(f *testing.F) {
	for _, s := range []string{"", "Read-Only File System", "x: EroFS", "ePeRm", "operation not permitted", "read-only filE", "-", "p", "op", "eP"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lower := []byte(s)
		for i, c := range lower {
			if 'A' <= c && c <= 'Z' {
				lower[i] = c + 'a' - 'A'
			}
		}
		want := slices.ContainsFunc(refusalStarts[:], func(start string) bool { return strings.Contains(string(lower), start) })
		if got := mayRefuse([]byte(s)); got != want {
			t.Fatalf("mayRefuse(%q) = %v, want %v", s, got, want)
		}
		if !want && sandboxRefusal.MatchString(s) {
			t.Fatalf("sandboxRefusal matches %q, which the quick scan lets through", s)
		}
	})
}

// FuzzRefusalsOfKeptOutput: the refusals found in a tool output as the
// parser keeps it (the JSON string the CLI wrote, undecoded, scanned as it
// is) are those found in the decoded text, however the CLI escaped it:
// as encoding/json writes it, without HTML escapes, or with every
// character as a \u escape.
func FuzzRefusalsOfKeptOutput(f *testing.F) {
	for _, s := range []string{"", "ok", "touch: x: Read-only file system\n", "\rEAD-ONLY FILE SYSTEM", "a\nEPERM\tb", "x <EROFS> & y", "operation\tnot permitted", "\u2028eperm\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var plain strings.Builder
		enc := json.NewEncoder(&plain)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		html, err := json.Marshal(s)
		require.NoError(t, err)
		for _, quoted := range []string{strings.TrimSuffix(plain.String(), "\n"), string(html), escapeAll(s)} {
			var text string
			require.NoError(t, json.Unmarshal([]byte(quoted), &text), quoted)
			line := `{"type":"tool_result","tool_id":"t","status":"success","output":` + quoted + "}\n"
			var got *runners.ToolResult
			require.NoError(t, (&runners.Gemini{}).Parse(strings.NewReader(line), func(e runners.Event) {
				if e.Kind == runners.KindToolResult {
					got = e.ToolResult
				}
			}))
			require.NotNil(t, got, line)
			require.Equal(t, text, got.Content.String())
			if want := refusalLines(text); !slices.Equal(refusals(got.Content), want) {
				t.Fatalf("refusals of %s: %q, want %q", quoted, refusals(got.Content), want)
			}
		}
	})
}

// escapeAll is s as a JSON string with every character a \u escape.
func escapeAll(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if r > 0xFFFF {
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
			continue
		}
		fmt.Fprintf(&b, `\u%04X`, r)
	}
	b.WriteByte('"')
	return b.String()
}
