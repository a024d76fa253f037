package spawn

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/hook"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// Messages for the running coder (`spawn send`) travel through the run's
// inbox (inbox.Inbox). During a coder turn, a CLI that runs hooks
// (runners.Hooker: claude) runs spawn's own binary as its hooks (installed
// for that one invocation with --settings): after
// each tool call the hook hands pending messages to the coder as the
// call's additional context, and when the coder is about to stop it
// blocks the stop with them, so the coder goes on and reads them. A
// message sent while no coder turn runs (the reviewer's turn, between
// turns) is put at the top of the coder's next prompt. After each coder
// turn, and as the coder works, the messages delivered are recorded
// (observability.EventMessage).

// hookSettings is the file name of the coder's hook settings in spawn's
// control directory, which the coder's sandbox shows read-only.
const hookSettings = "coder-hooks.json"

// coderHooks prepares the hooks of the coder's turn in round, when its
// CLI runs hooks (runners.Hooker): the run's inbox, and the settings file
// that has the CLI call this binary with it. It returns the paths the
// hooks need inside the coder's sandbox. When there are none, or they
// cannot be prepared, the coder runs without them: messages then wait for
// its next prompt (and, when they could not be prepared, the run is told
// why).
func (r *run) coderHooks(cli seatCLI, round int) coderBinds {
	hooker, ok := cli.adapter.(runners.Hooker)
	if !ok {
		return coderBinds{}
	}
	b, err := r.prepareHooks(hooker, cli.name(), round)
	if err != nil {
		r.emit(observability.Event{Kind: observability.EventWarning, Text: fmt.Sprintf("messages sent with spawn send reach the coder only in its next prompt, not during this turn: %v", err)})
		return coderBinds{}
	}
	return b
}

func (r *run) prepareHooks(hooker runners.Hooker, cli string, round int) (coderBinds, error) {
	inbox := r.dir.Inbox()
	if err := inbox.Prepare(); err != nil {
		return coderBinds{}, err
	}
	settings, err := hooker.HookSettings(r.conf.exe, inbox.UndeliveredTest(), inbox.Dir(), strconv.Itoa(round))
	if err != nil {
		return coderBinds{}, err
	}
	path, err := r.conf.writeControl(hookSettings, settings)
	if err != nil {
		return coderBinds{}, fmt.Errorf("cannot write %s's hook settings: %w", cli, err)
	}
	return coderBinds{settings: path, pending: inbox.PendingDir(), delivered: inbox.DeliveredDir()}, nil
}

// coderBinds are the paths the coder's hooks need inside its sandbox: the
// settings file and the inbox's messages, read-only, and its deliveries,
// writable. The zero value needs none.
type coderBinds struct {
	settings  string // the CLI's hook settings file
	pending   string
	delivered string
}

// readOnly is what the sandbox shows read-only for the hooks.
func (b coderBinds) readOnly() []string {
	if b.settings == "" {
		return nil
	}
	return []string{b.settings, b.pending}
}

// withMessages puts the messages waiting in the inbox (sent while no
// coder turn ran) at the top of the prompt of the coder's turn in round,
// and delivers them. An inbox that cannot be read leaves the prompt as it
// is, and the run is told.
func (r *run) withMessages(prompt string, round int) string {
	msgs, err := r.dir.Inbox().Take(r.events.now(), observability.DeliveryPrompt, round)
	if err != nil {
		r.emit(observability.Event{Kind: observability.EventWarning, Text: fmt.Sprintf("cannot read the messages sent with spawn send: %v", err)})
	}
	if len(msgs) == 0 {
		return prompt
	}
	return hook.MessageText(msgs) + "\n\n---\n\n" + prompt
}

// recordMessages puts the messages delivered and not yet recorded on the
// event stream, in the order they were delivered. It is called when a
// coder turn ends and when the run finishes; as the coder works,
// recordNewMessages.
func (r *run) recordMessages(cli seatCLI) {
	r.msgs.Lock()
	defer r.msgs.Unlock()
	r.readMessages(cli)
}

// settle is how long after stamp, a stamp of the inbox's deliveries, a
// read must come for a later delivery to be sure to change the stamp: more
// than the file system's clock tick. A stamp in whole seconds comes from a
// coarse clock (ext3, HFS+: 1 s; FAT: 2 s); a finer one from the kernel's
// clock, which ticks every few milliseconds.
func settle(stamp time.Time) time.Duration {
	if stamp.Nanosecond() == 0 {
		return 3 * time.Second
	}
	return 50 * time.Millisecond
}

// inboxEvery is how often, at most, recordNewMessages looks at the inbox:
// an agent that streams makes thousands of progress events a second, and
// a look is a system call.
const inboxEvery = 5 * time.Millisecond

// recordNewMessages is recordMessages for each of the coder's progress
// events, which come by the thousand: it looks at the inbox at most every
// inboxEvery, and reads it only when a delivery may have come since it
// last did: when the stamp of the inbox's deliveries changed, or when that
// last read came too soon after the stamp it saw (see settle) (a delivery
// may then have left the stamp as it was). The bound: a message is told
// before every event of the coder that comes inboxEvery or more after its
// delivery (then the look before that event came before the delivery, or
// it comes at that event), which is before what the coder does with it:
// the coder's model must read the message first.
func (r *run) recordNewMessages(cli seatCLI) {
	r.msgs.Lock()
	defer r.msgs.Unlock()
	now := time.Now()
	if now.Sub(r.inboxRead.looked) < inboxEvery {
		return
	}
	r.inboxRead.looked = now
	// The stamp is taken before the read: a delivery the read misses
	// changes it.
	stamp, err := r.dir.Inbox().DeliveredStamp()
	if err == nil && r.inboxRead.settled && stamp.Equal(r.inboxRead.stamp) {
		return
	}
	readAt := time.Now()
	r.readMessages(cli)
	r.inboxRead = inboxRead{stamp: stamp, settled: err == nil && readAt.Sub(stamp) > settle(stamp), looked: now}
}

// inboxRead is what recordNewMessages saw when it last read the inbox.
type inboxRead struct {
	stamp   time.Time // the stamp of the inbox's deliveries, taken before the read
	settled bool      // the read came settle(stamp) after it: a later delivery changes it
	looked  time.Time // when recordNewMessages last looked at the stamp
}

// readMessages is recordMessages, with r.msgs held.
func (r *run) readMessages(cli seatCLI) {
	msgs, err := r.dir.Inbox().Delivered()
	if err != nil {
		r.emit(observability.Event{Kind: observability.EventWarning, Text: fmt.Sprintf("cannot read the messages sent with spawn send: %v", err)})
	}
	var fresh []observability.Message
	for _, m := range msgs {
		if !r.record.hasMessage(m.ID) {
			fresh = append(fresh, m)
		}
	}
	sortByDelivery(fresh)
	for _, m := range fresh {
		r.emit(observability.Event{Kind: observability.EventMessage, Role: observability.RoleCoder, LLM: cli.llm(), Round: m.Round, Message: &m})
	}
}

// sortByDelivery orders msgs by delivery time, then by id (the order
// they were sent).
func sortByDelivery(msgs []observability.Message) {
	at := func(m observability.Message) time.Time {
		if m.DeliveredAt == nil {
			return time.Time{}
		}
		return *m.DeliveredAt
	}
	slices.SortStableFunc(msgs, func(a, b observability.Message) int {
		if c := at(a).Compare(at(b)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
