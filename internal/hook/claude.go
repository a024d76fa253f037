package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/shell"
)

// Arg is the first argument of the command claude runs for a spawn
// hook: `<spawn binary> __spawn-hook <event> <args>...`. spawn's binaries
// answer such a call (Main, through internal/entry) before anything else,
// and exit; no command or flag of spawn's is named like it.
const Arg = "__spawn-hook"

// Event is a claude hook event spawn answers, as it is named in a hook
// command's arguments.
type Event string

// The hook events spawn installs.
const (
	// PostToolUse: a tool call succeeded (claude's PostToolUse).
	PostToolUse Event = "post-tool-use"
	// PostToolUseFailure: a tool call failed (claude's PostToolUseFailure).
	PostToolUseFailure Event = "post-tool-use-failure"
	// Stop: the agent is about to end its turn (claude's Stop).
	Stop Event = "stop"
)

// claudeEvent is the name claude gives each event: in its settings, and as
// hook_event_name in a hook's input.
var claudeEvent = map[Event]string{
	PostToolUse:        "PostToolUse",
	PostToolUseFailure: "PostToolUseFailure",
	Stop:               "Stop",
}

// hookTimeout is the seconds claude lets a spawn hook run before it
// cancels it. A hook reads a few small files; a minute is a hung disk.
const hookTimeout = 60

// ClaudeSettings returns claude settings (the file given to claude
// with --settings, merged over the user's own settings and never written
// into them) that install spawn's hooks: after every tool call (whether it
// succeeded or failed) and when the agent is about to stop, claude runs
//
//	'<exe>' __spawn-hook <event> '<arg>'...
//
// through its shell, each word single-quoted. exe must be an absolute path
// to a binary that answers Arg calls (see Call).
//
// When when is not "", it is a shell condition (a command list) the hook
// asks first: exe runs only when it succeeds; otherwise the hook reads
// claude's input and answers nothing, which is what exe answers when it
// has nothing to hand over. A hook runs at every tool call, and a shell
// and cat cost a few milliseconds less than spawn's binary; when must be
// cheap (the shell's own tests, no program) and may succeed for nothing,
// never fail when exe has something to say.
//
// They also keep claude's own sandbox off ("sandbox": {"enabled": false}),
// whatever the repository's .claude/settings.json says (--settings takes
// precedence over a project's settings): spawn's sandbox is the boundary,
// and a sandbox does not nest in it (Seatbelt's sandbox_apply fails with
// "Operation not permitted"; bubblewrap cannot make a user namespace).
func ClaudeSettings(exe, when string, args ...string) ([]byte, error) {
	if !strings.HasPrefix(exe, "/") {
		return nil, fmt.Errorf("runners: claude hooks: %q is not an absolute path", exe)
	}
	type command struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	type matcher struct {
		Matcher string    `json:"matcher,omitempty"`
		Hooks   []command `json:"hooks"`
	}
	hooks := map[string][]matcher{}
	for _, ev := range []Event{PostToolUse, PostToolUseFailure, Stop} {
		words := append([]string{exe, Arg, string(ev)}, args...)
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = shell.Quote(w)
		}
		run := strings.Join(quoted, " ")
		if when != "" {
			run = "if " + when + "; then exec " + run + "; fi; exec cat >/dev/null"
		}
		m := matcher{Hooks: []command{{Type: "command", Command: run, Timeout: hookTimeout}}}
		if ev != Stop {
			m.Matcher = "*" // every tool; Stop has no matcher
		}
		hooks[claudeEvent[ev]] = []matcher{m}
	}
	b, err := json.MarshalIndent(map[string]any{"hooks": hooks, "sandbox": map[string]bool{"enabled": false}}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("runners: claude hooks: %w", err)
	}
	return b, nil
}

// Call reports whether args (a process's arguments after argv[0]) are
// a spawn hook call, and returns its event and the arguments after it.
// An unknown event is an error.
func Call(args []string) (event Event, rest []string, ok bool, err error) {
	if len(args) == 0 || args[0] != Arg {
		return "", nil, false, nil
	}
	if len(args) < 2 {
		return "", nil, true, errors.New("spawn hook: no event given")
	}
	ev := Event(args[1])
	if _, known := claudeEvent[ev]; !known {
		return "", nil, true, fmt.Errorf("spawn hook: unknown event %q", args[1])
	}
	return ev, args[2:], true, nil
}

// hookInput is the part of claude's hook input (one JSON object on the
// hook's stdin) spawn reads.
type hookInput struct {
	HookEventName string `json:"hook_event_name"`
}

// Answer answers one claude hook call for event: it reads claude's
// input from in, calls take for the text to hand the agent ("" when there
// is none) and writes claude's answer on out:
//
//   - after a tool call, the text as the call's additional context:
//     {"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":TEXT}};
//   - at a stop, a block whose reason is the text, so the agent goes on
//     and reads it: {"decision":"block","reason":TEXT}.
//
// With no text it writes nothing: claude carries on, and stops when it was
// stopping. take must return each text once (spawn's takes the messages
// out of the inbox): then a stop is blocked only to hand the agent
// something new, the hook never keeps an agent going by itself, and claude's
// stop_hook_active (the agent already goes on because of a block) needs
// no handling of its own. Input that is not claude's hook input for
// event is an error, and take is not called.
func Answer(event Event, in io.Reader, out io.Writer, take func() (string, error)) error {
	var input hookInput
	if err := json.NewDecoder(in).Decode(&input); err != nil {
		return fmt.Errorf("spawn hook: read claude's input: %w", err)
	}
	if want := claudeEvent[event]; input.HookEventName != want {
		return fmt.Errorf("spawn hook: claude's input is for %q, not %q", input.HookEventName, want)
	}
	text, err := take()
	if err != nil || text == "" {
		return err
	}
	var answer any
	if event == Stop {
		answer = struct {
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
		}{"block", text}
	} else {
		type specific struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		}
		answer = struct {
			HookSpecificOutput specific `json:"hookSpecificOutput"`
		}{specific{claudeEvent[event], text}}
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return fmt.Errorf("spawn hook: %w", err)
	}
	if _, err := out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("spawn hook: write the answer: %w", err)
	}
	return nil
}
