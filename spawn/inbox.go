package spawn

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/hook"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// Messages for the running coder (`spawn send`) travel through the run's
// inbox (runs.Inbox). During a coder turn, a CLI that runs hooks
// (runners.Hooker: claude) runs spawn's own binary as its hooks (installed
// for that one invocation with --settings): after
// each tool call the hook hands pending messages to the coder as the
// call's additional context, and when the coder is about to stop it
// blocks the stop with them, so the coder goes on and reads them. A
// message sent while no coder turn runs (the reviewer's turn, between
// turns) is put at the top of the coder's next prompt. After each coder
// turn, and as the coder works, the messages delivered are recorded
// (EventMessage).

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
		r.emit(Event{Kind: EventWarning, Text: fmt.Sprintf("messages sent with spawn send reach the coder only in its next prompt, not during this turn: %v", err)})
		return coderBinds{}
	}
	return b
}

func (r *run) prepareHooks(hooker runners.Hooker, cli string, round int) (coderBinds, error) {
	inbox := r.dir.Inbox()
	if err := inbox.Prepare(); err != nil {
		return coderBinds{}, err
	}
	settings, err := hooker.HookSettings(r.conf.exe, inbox.Dir(), strconv.Itoa(round))
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
		r.emit(Event{Kind: EventWarning, Text: fmt.Sprintf("cannot read the messages sent with spawn send: %v", err)})
	}
	if len(msgs) == 0 {
		return prompt
	}
	return hook.MessageText(msgs) + "\n\n---\n\n" + prompt
}

// recordMessages puts the messages delivered and not yet recorded on the
// event stream, in the order they were delivered. It is called as the
// coder works (each of its progress events) and when its turn ends.
func (r *run) recordMessages(cli seatCLI) {
	r.msgs.Lock()
	defer r.msgs.Unlock()
	msgs, err := r.dir.Inbox().Delivered()
	if err != nil {
		r.emit(Event{Kind: EventWarning, Text: fmt.Sprintf("cannot read the messages sent with spawn send: %v", err)})
	}
	var fresh []observability.Message
	for _, m := range msgs {
		if !r.record.hasMessage(m.ID) {
			fresh = append(fresh, m)
		}
	}
	sortByDelivery(fresh)
	for _, m := range fresh {
		r.emit(Event{Kind: EventMessage, Role: observability.RoleCoder, LLM: cli.llm(), Round: m.Round, Message: &m})
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

// SendWait is how long `spawn send` waits, by default, to see its message
// delivered before it reports it queued.
const SendWait = 3 * time.Second

// Sent is what became of a message sent with Send.
type Sent struct {
	// Run is the run's id.
	Run string `json:"run"`
	// Delivered is true when the coder got the message within the wait.
	Delivered bool                  `json:"delivered"`
	Message   observability.Message `json:"message"`
}

// Send posts text to the inbox of the run ref names (an id, a unique
// prefix, or "last") and waits up to wait for the coder to get it. A run
// that is not live (finished, abandoned, or never started) is a usage
// *Error: its coder will never read the message. A message still waiting
// when the run ends within the wait is withdrawn, and that is a usage
// *Error too. Cancelling ctx ends the wait early; the message stays
// queued.
func (r *Repo) Send(ctx context.Context, ref, text string, wait time.Duration) (Sent, error) {
	if strings.TrimSpace(text) == "" {
		return Sent{}, errorf(KindUsage, nil, "the message is empty; write what the coder should know, e.g. spawn send last \"use the existing logger\"")
	}
	e, err := r.Find(ref)
	if err != nil {
		return Sent{}, err
	}
	if e.State != runs.StateRunning {
		return Sent{}, notLive(e)
	}
	inbox := e.Inbox()
	m, err := inbox.Post(text, time.Now())
	if err != nil {
		return Sent{}, errorf(KindInternal, err, "cannot post the message to run %s: %v", e.ID, err)
	}
	sent := Sent{Run: e.ID, Message: m}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		got, err := inbox.Message(m.ID)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return sent, errorf(KindInternal, err, "cannot read run %s's inbox: %v", e.ID, err)
		}
		if err == nil && got.DeliveredAt != nil {
			sent.Delivered, sent.Message = true, got
			return sent, nil
		}
		select {
		case <-ctx.Done():
			return sent, nil
		case <-deadline.C:
			return r.stillLive(e.ID, inbox, sent)
		case <-tick.C:
		}
	}
}

// stillLive checks, once the wait is over, that the run the queued
// message waits for is still live. When it ended meanwhile, the message is
// withdrawn (no coder would ever read it) and that is a usage *Error;
// when the coder took it at the last moment, it is reported delivered.
func (r *Repo) stillLive(id string, inbox *runs.Inbox, sent Sent) (Sent, error) {
	e, err := r.Registry.Find(id)
	if err != nil {
		return sent, errorf(KindInternal, err, "cannot read the run registry: %v", err)
	}
	if e.State == runs.StateRunning {
		return sent, nil
	}
	withdrawn, err := inbox.Withdraw(sent.Message.ID)
	if err != nil {
		return sent, errorf(KindInternal, err, "run %s ended and its coder will not read the message, which could not be withdrawn: %v", id, err)
	}
	if withdrawn {
		return sent, notLive(e)
	}
	got, err := inbox.Message(sent.Message.ID)
	if err == nil && got.DeliveredAt != nil {
		sent.Delivered, sent.Message = true, got
	}
	return sent, nil
}

// notLive is the usage *Error for a message to a run that is not running.
func notLive(e runs.Entry) error {
	why := "is not running"
	switch e.State {
	case runs.StateFinished:
		why = "has finished"
	case runs.StateAbandoned:
		why = "was abandoned (its spawn process died)"
	}
	next := fmt.Sprintf("spawn resume %s continues it, then send again", e.ID)
	if rec, err := e.ReadRecord(); err == nil && e.State != runs.StateAbandoned {
		if err := Resumable(rec); err != nil {
			next = "it has nothing left to continue; spawn run starts a new run"
		}
	}
	return errorf(KindUsage, nil, "run %s %s, so no coder will read the message; spawn send reaches only a live run: %s", e.ID, why, next)
}
