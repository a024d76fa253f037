// Package hook is the hooks spawn installs in the coder's claude
// (ClaudeSettings) and their answers: after each tool call, and when the
// coder is about to stop, claude runs spawn's own binary, which hands the
// coder the messages sent with `spawn send` (the run's inbox,
// inbox.Inbox).
//
// A hook runs at every tool call, so it must cost little more than a
// process: the binary answers it (Main, through internal/entry) before it
// sets up anything else, and it links few packages: nothing of runners or
// runs (spawn-shim, which answers it, starts in less time for each package
// it does not link).
package hook

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs/inbox"
)

// Main answers a hook call when args (a process's arguments after
// argv[0]) are one: claude runs spawn's binary as
// `<exe> __spawn-hook <event> <inbox> <round>` (see Arg). It
// returns 0 when answered (a message handed over, or none to hand), 1
// when not (a non-blocking error for claude: the coder carries on, and the
// message waits for the next chance); ok is false when args are no hook
// call, and nothing ran.
func Main(args []string, in io.Reader, out, errw io.Writer) (code int, ok bool) {
	ev, rest, ok, err := Call(args)
	if !ok {
		return 0, false
	}
	if err == nil {
		err = reply(ev, rest, in, out, errw, time.Now)
	}
	if err != nil {
		fmt.Fprintf(errw, "spawn: %v\n", err)
		return 1, true
	}
	return 0, true
}

// reply answers one claude hook call for event; args are the inbox
// directory and the coder's round. The pending messages are taken from
// the inbox (delivered now, by a tool call or at a stop) and handed to
// claude. When only some could be taken, those are handed over and the
// error is written on errw.
func reply(ev Event, args []string, in io.Reader, out, errw io.Writer, now func() time.Time) error {
	if len(args) != 2 {
		return fmt.Errorf("spawn hook: want the inbox and the round after the event, got %q", args)
	}
	round, err := strconv.Atoi(args[1])
	if err != nil {
		return fmt.Errorf("spawn hook: the round %q is not a number", args[1])
	}
	box := inbox.New(args[0])
	how := observability.DeliveryToolCall
	if ev == Stop {
		how = observability.DeliveryStop
	}
	return Answer(ev, in, out, func() (string, error) {
		msgs, err := box.Take(now(), how, round)
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
