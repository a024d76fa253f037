package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// Names inside a run's inbox directory.
const (
	pendingName   = "pending"
	deliveredName = "delivered"
	messageExt    = ".json"
)

// Inbox is a run's message inbox: messages for its running coder, posted
// by `spawn send` and taken by whoever hands them to the coder (claude's
// hooks, inside the coder's sandbox, or spawn itself, in the coder's next
// prompt). It is a directory:
//
//	pending/<id>.json     posted, not yet delivered
//	delivered/<id>.json   delivered: the same message with when, how and in which round
//
// Each file is one observability.Message, written whole to a temporary
// name and renamed into place, so a reader never sees half a message.
// Taking a message starts with renaming it out of pending/: of two takers
// racing for it, exactly one gets it. An Inbox is safe for concurrent use
// by goroutines and processes.
type Inbox struct {
	dir string
}

// Inbox returns the run's inbox.
func (p Paths) Inbox() *Inbox { return NewInbox(p.InboxDir()) }

// NewInbox returns the inbox kept in dir (a run's InboxDir). It touches
// nothing on disk.
func NewInbox(dir string) *Inbox { return &Inbox{dir: dir} }

// Dir returns the inbox's directory.
func (in *Inbox) Dir() string { return in.dir }

// Prepare creates the inbox's directories, so that a sandbox can bind the
// inbox before anything was posted to it.
func (in *Inbox) Prepare() error {
	for _, d := range []string{in.pending(), in.delivered()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create the inbox %s: %w", in.dir, err)
		}
	}
	return nil
}

func (in *Inbox) pending() string   { return filepath.Join(in.dir, pendingName) }
func (in *Inbox) delivered() string { return filepath.Join(in.dir, deliveredName) }

// Post puts a message with text into the inbox, sent at now, and returns
// it. Its id sorts after the ids of the messages posted before it (to the
// nanosecond), so messages are delivered in the order they were sent.
func (in *Inbox) Post(text string, now time.Time) (observability.Message, error) {
	if strings.TrimSpace(text) == "" {
		return observability.Message{}, errors.New("post a message: the message is empty")
	}
	if err := in.Prepare(); err != nil {
		return observability.Message{}, err
	}
	now = now.UTC()
	m := observability.Message{
		ID:     fmt.Sprintf("%s-%09d-%04x", now.Format(idTimestamp), now.Nanosecond(), rand.N(0x10000)),
		Text:   text,
		SentAt: now,
	}
	if err := writeMessage(in.pending(), m); err != nil {
		return observability.Message{}, fmt.Errorf("post a message to %s: %w", in.dir, err)
	}
	return m, nil
}

// Take delivers every pending message, oldest first: each is moved to
// delivered/ stamped with now, how and round, and returned. A message
// another taker got first is not returned. No pending message is no
// error (nil, nil). On an error, the messages taken so far are returned
// with it.
func (in *Inbox) Take(now time.Time, how observability.Delivery, round int) ([]observability.Message, error) {
	names, err := messageNames(in.pending())
	if err != nil {
		return nil, fmt.Errorf("read the inbox %s: %w", in.dir, err)
	}
	var taken []observability.Message
	for _, name := range names {
		m, ok, err := in.take(name, now, how, round)
		if ok {
			taken = append(taken, m)
		}
		if err != nil {
			return taken, fmt.Errorf("take a message from %s: %w", in.dir, err)
		}
	}
	return taken, nil
}

// take claims one pending message by renaming it to a hidden name in
// delivered/, stamps it and writes it under its own name there. ok is
// false when another taker claimed it first; it is true, with an error,
// when the message was delivered but its claim could not be removed.
func (in *Inbox) take(name string, now time.Time, how observability.Delivery, round int) (_ observability.Message, ok bool, err error) {
	claim := filepath.Join(in.delivered(), ".taking-"+name)
	if err := os.Rename(filepath.Join(in.pending(), name), claim); errors.Is(err, fs.ErrNotExist) {
		return observability.Message{}, false, nil
	} else if err != nil {
		return observability.Message{}, false, err
	}
	m, err := readMessage(claim)
	if err != nil {
		return observability.Message{}, false, err
	}
	at := now.UTC()
	m.DeliveredAt, m.How, m.Round = &at, how, round
	if err := writeMessage(in.delivered(), m); err != nil {
		return observability.Message{}, false, err
	}
	return m, true, os.Remove(claim)
}

// Delivered returns the delivered messages, oldest first. An inbox that
// does not exist has none.
func (in *Inbox) Delivered() ([]observability.Message, error) {
	return in.list(in.delivered())
}

// Pending returns the messages waiting for the coder, oldest first.
func (in *Inbox) Pending() ([]observability.Message, error) {
	return in.list(in.pending())
}

func (in *Inbox) list(dir string) ([]observability.Message, error) {
	names, err := messageNames(dir)
	if err != nil {
		return nil, fmt.Errorf("read the inbox %s: %w", in.dir, err)
	}
	var ms []observability.Message
	for _, name := range names {
		m, err := readMessage(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // taken meanwhile
		}
		if err != nil {
			return ms, fmt.Errorf("read the inbox %s: %w", in.dir, err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// Message returns the message id: delivered, or still pending (then its
// DeliveredAt is nil). A message that is in neither place (withdrawn, or
// never posted) is an error matching fs.ErrNotExist.
func (in *Inbox) Message(id string) (observability.Message, error) {
	name := id + messageExt
	m, err := readMessage(filepath.Join(in.delivered(), name))
	if errors.Is(err, fs.ErrNotExist) {
		m, err = readMessage(filepath.Join(in.pending(), name))
		if errors.Is(err, fs.ErrNotExist) {
			// Between pending/ and delivered/: being taken right now.
			m, err = readMessage(filepath.Join(in.delivered(), ".taking-"+name))
			m.DeliveredAt = nil
		}
	}
	if err != nil {
		return observability.Message{}, fmt.Errorf("message %s: %w", id, err)
	}
	return m, nil
}

// Withdraw removes the pending message id and reports whether it did:
// false when it was delivered first (or never posted).
func (in *Inbox) Withdraw(id string) (bool, error) {
	err := os.Remove(filepath.Join(in.pending(), id+messageExt))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("withdraw message %s: %w", id, err)
	}
	return true, nil
}

// messageNames lists the message files of dir, sorted; a directory that
// does not exist has none.
func messageNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); !strings.HasPrefix(n, ".") && strings.HasSuffix(n, messageExt) && e.Type().IsRegular() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

func readMessage(path string) (observability.Message, error) {
	var m observability.Message
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// writeMessage writes m to dir/<id>.json, whole or not at all.
func writeMessage(dir string, m observability.Message) (err error) {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".new-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, os.Remove(f.Name()))
		}
	}()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, m.ID+messageExt))
}
