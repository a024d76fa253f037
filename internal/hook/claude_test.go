package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/shell"
)

func TestClaudeHookSettingsInstallEveryHookWithQuotedWords(t *testing.T) {
	b, err := ClaudeSettings("/opt/my spawn/spawn", "", "/repo/.spawn/runs/x/inbox", "2")
	require.NoError(t, err)
	var s struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	require.NoError(t, json.Unmarshal(b, &s))
	require.Len(t, s.Hooks, 3)
	var sandbox struct {
		Sandbox map[string]any `json:"sandbox"`
	}
	require.NoError(t, json.Unmarshal(b, &sandbox))
	assert.Equal(t, map[string]any{"enabled": false}, sandbox.Sandbox, "claude's own sandbox stays off: spawn's is around it")
	for name, event := range map[string]string{"PostToolUse": "post-tool-use", "PostToolUseFailure": "post-tool-use-failure", "Stop": "stop"} {
		require.Len(t, s.Hooks[name], 1, name)
		m := s.Hooks[name][0]
		if name == "Stop" {
			assert.Empty(t, m.Matcher, "Stop takes no matcher")
		} else {
			assert.Equal(t, "*", m.Matcher, "every tool")
		}
		require.Len(t, m.Hooks, 1)
		assert.Equal(t, "command", m.Hooks[0].Type)
		assert.Positive(t, m.Hooks[0].Timeout)
		assert.Equal(t, "'/opt/my spawn/spawn' '__spawn-hook' '"+event+"' '/repo/.spawn/runs/x/inbox' '2'", m.Hooks[0].Command)
	}
	_, err = ClaudeSettings("spawn", "")
	assert.Error(t, err, "a relative binary would be looked up in the agent's PATH")
}

func TestAHookRunsTheBinaryOnlyWhenItsConditionHoldsAndAlwaysReadsItsInput(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "spawn's hook")
	ran := filepath.Join(dir, "ran")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" >"+shell.Quote(ran)+"\ncat >/dev/null\necho answered\n"), 0o755))
	// claude's input for a tool call can be large (a file's content):
	// whoever answers reads it all, so claude's write never fails.
	input := `{"hook_event_name":"PostToolUse","tool_response":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, tc := range []struct {
		when string
		runs bool
	}{{"", true}, {"true", true}, {"[ -e " + shell.Quote(dir) + " ]", true}, {"false", false}, {"[ -e " + shell.Quote(filepath.Join(dir, "none")) + " ]", false}} {
		require.NoError(t, os.RemoveAll(ran))
		b, err := ClaudeSettings(exe, tc.when, "/inbox dir", "3")
		require.NoError(t, err)
		var s struct {
			Hooks map[string][]struct {
				Hooks []struct{ Command string } `json:"hooks"`
			} `json:"hooks"`
		}
		require.NoError(t, json.Unmarshal(b, &s))
		cmd := exec.Command("/bin/sh", "-c", s.Hooks["PostToolUse"][0].Hooks[0].Command)
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		var out bytes.Buffer
		cmd.Stdout = &out
		require.NoError(t, cmd.Start())
		_, werr := io.WriteString(in, input)
		require.NoError(t, errors.Join(werr, in.Close()), "when %q: the hook reads claude's whole input", tc.when)
		require.NoError(t, cmd.Wait(), "when %q", tc.when)
		args, err := os.ReadFile(ran)
		if !tc.runs {
			assert.ErrorIs(t, err, os.ErrNotExist, "when %q fails, the binary does not run", tc.when)
			assert.Empty(t, out.String(), "and the hook answers nothing")
			continue
		}
		require.NoError(t, err, "when %q holds, the binary runs", tc.when)
		assert.Equal(t, "__spawn-hook\npost-tool-use\n/inbox dir\n3\n", string(args))
		assert.Equal(t, "answered\n", out.String())
	}
}

func TestAHookCommandReachesTheBinaryWordForWordThroughTheShell(t *testing.T) {
	words := []string{"/bin/echo", "it's", "a $HOME `x`", `back\slash`, "two  spaces", ""}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = shell.Quote(w)
	}
	out, err := proc.Run(context.Background(), proc.Cmd{Path: "/bin/sh", Args: []string{"-c", `printf '%s\n' ` + strings.Join(quoted[1:], " ")}})
	require.NoError(t, err)
	assert.Equal(t, strings.Join(words[1:], "\n")+"\n", string(out))
}

func TestHookCall(t *testing.T) {
	ev, rest, ok, err := Call([]string{"__spawn-hook", "stop", "/inbox", "1"})
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, Stop, ev)
	assert.Equal(t, []string{"/inbox", "1"}, rest)

	_, _, ok, err = Call([]string{"run", "fix it"})
	require.NoError(t, err)
	assert.False(t, ok, "spawn's own commands are not hook calls")
	_, _, ok, err = Call(nil)
	require.NoError(t, err)
	assert.False(t, ok)

	_, _, ok, err = Call([]string{"__spawn-hook", "pre-tool-use"})
	assert.True(t, ok)
	assert.ErrorContains(t, err, "unknown event")
	_, _, ok, err = Call([]string{"__spawn-hook"})
	assert.True(t, ok)
	assert.Error(t, err)
}

func TestAnswerHook(t *testing.T) {
	text := func(s string) func() (string, error) { return func() (string, error) { return s, nil } }
	tests := []struct {
		name  string
		event Event
		input string
		take  func() (string, error)
		want  string
	}{
		{
			name: "a message after a tool call is its additional context", event: PostToolUse,
			input: `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_response":{"stdout":"ok"}}`,
			take:  text("use tabs"),
			want:  `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"use tabs"}}`,
		},
		{
			name: "after a failed tool call too", event: PostToolUseFailure,
			input: `{"hook_event_name":"PostToolUseFailure","tool_name":"Bash","error":"exit 1"}`,
			take:  text("use tabs"),
			want:  `{"hookSpecificOutput":{"hookEventName":"PostToolUseFailure","additionalContext":"use tabs"}}`,
		},
		{
			name: "a message at a stop blocks it", event: Stop,
			input: `{"hook_event_name":"Stop","stop_hook_active":false}`,
			take:  text("add a test"),
			want:  `{"decision":"block","reason":"add a test"}`,
		},
		{
			name: "a new message blocks a stop the hook already blocked once", event: Stop,
			input: `{"hook_event_name":"Stop","stop_hook_active":true}`,
			take:  text("and another"),
			want:  `{"decision":"block","reason":"and another"}`,
		},
		{
			name: "no message, no answer: the agent stops", event: Stop,
			input: `{"hook_event_name":"Stop","stop_hook_active":true}`,
			take:  text(""),
		},
		{
			name: "no message after a tool call", event: PostToolUse,
			input: `{"hook_event_name":"PostToolUse"}`,
			take:  text(""),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, Answer(tt.event, strings.NewReader(tt.input), &out, tt.take))
			if tt.want == "" {
				assert.Empty(t, out.String())
				return
			}
			assert.JSONEq(t, tt.want, out.String())
		})
	}
}

func TestAnswerHookRefusesInputItCannotRead(t *testing.T) {
	called := false
	take := func() (string, error) { called = true; return "x", nil }
	var out bytes.Buffer
	assert.ErrorContains(t, Answer(Stop, strings.NewReader("not json"), &out, take), "read claude's input")
	assert.ErrorContains(t, Answer(Stop, strings.NewReader(`{"hook_event_name":"PostToolUse"}`), &out, take), `not "Stop"`)
	assert.False(t, called, "no message is taken for a call that cannot be answered")
	assert.Empty(t, out.String())

	boom := errors.New("disk gone")
	err := Answer(PostToolUse, strings.NewReader(`{"hook_event_name":"PostToolUse"}`), &out, func() (string, error) { return "", boom })
	assert.ErrorIs(t, err, boom)
}
