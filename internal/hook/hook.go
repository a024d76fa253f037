// Package hook answers the hooks spawn installs in the coder's claude
// (runners.ClaudeHookSettings): after each tool call, and when the coder is
// about to stop, claude runs spawn's own binary, which hands the coder the
// messages sent with `spawn send` (the run's inbox, runs.Inbox).
//
// A hook runs at every tool call, so it must cost little more than a
// process: this package answers it from its init, and depends on nothing
// outside the standard library but spawn's inbox and claude's hook
// protocol, so that Go initialises it, and it exits, before the packages
// of the rest of the binary (kin-openapi's and jsonschema's
// initialisation alone cost milliseconds).
package hook

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// init answers a hook call: claude runs spawn's binary as
// `<exe> __spawn-hook <event> <inbox> <round>` (see runners.HookArg).
// Every binary that links this package (spawn, through package spawn, and
// test binaries standing in for it) answers it here, before main or
// TestMain runs, and exits: 0
// when answered (a message handed over, or none to hand), 1 when not (a
// non-blocking error for claude: the coder carries on, and the message
// waits for the next chance).
func init() {
	if len(os.Args) < 2 {
		return
	}
	ev, args, ok, err := runners.HookCall(os.Args[1:])
	if !ok {
		return
	}
	if err == nil {
		err = reply(ev, args, os.Stdin, os.Stdout, os.Stderr, time.Now)
	}
	code := 0
	if err != nil {
		fmt.Fprintf(os.Stderr, "spawn: %v\n", err)
		code = 1
	}
	// Not os.Exit: nothing is buffered, and os.Exit in a binary built with
	// -race sleeps first (GORACE atexit_sleep_ms), at every tool call.
	syscall.Exit(code)
}

// reply answers one claude hook call for event; args are the inbox
// directory and the coder's round. The pending messages are taken from
// the inbox (delivered now, by a tool call or at a stop) and handed to
// claude. When only some could be taken, those are handed over and the
// error is written on errw.
func reply(ev runners.HookEvent, args []string, in io.Reader, out, errw io.Writer, now func() time.Time) error {
	if len(args) != 2 {
		return fmt.Errorf("spawn hook: want the inbox and the round after the event, got %q", args)
	}
	round, err := strconv.Atoi(args[1])
	if err != nil {
		return fmt.Errorf("spawn hook: the round %q is not a number", args[1])
	}
	inbox := runs.NewInbox(args[0])
	how := observability.DeliveryToolCall
	if ev == runners.HookStop {
		how = observability.DeliveryStop
	}
	return runners.AnswerHook(ev, in, out, func() (string, error) {
		msgs, err := inbox.Take(now(), how, round)
		if err != nil && len(msgs) > 0 {
			fmt.Fprintf(errw, "spawn: %v\n", err)
			err = nil
		}
		return MessageText(msgs), err
	})
}

// MessageText is what the coder reads of msgs: the messages, introduced
// as the user's; "" for none.
func MessageText(msgs []observability.Message) string {
	if len(msgs) == 0 {
		return ""
	}
	var b strings.Builder
	if len(msgs) == 1 {
		b.WriteString("The person who started this run sent you a message (with `spawn send`) while you work on the task; take it into account:\n\n")
	} else {
		b.WriteString("The person who started this run sent you messages (with `spawn send`) while you work on the task; take them into account:\n\n")
	}
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(strings.TrimSpace(m.Text))
	}
	return b.String()
}
