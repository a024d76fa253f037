// Package inbox is a run's message inbox: what `spawn send` posts for the
// run's coder, and who delivered it, when and how.
package inbox

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

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
	"github.com/infinite-improbability-drive/spawn/internal/shell"
	"github.com/infinite-improbability-drive/spawn/observability"
)

// Names inside a run's inbox directory.
const (
	pendingName   = "pending"
	deliveredName = "delivered"
	messageExt    = ".json"
)

// idTimestamp is the time at the head of a message's id, to the second,
// as a run's id has it (runs.NewID); the nanoseconds follow.
const idTimestamp = "20060102-150405"

// Inbox is a run's message inbox: messages for its running coder, posted
// by `spawn send` and delivered by whoever hands them to the coder
// (claude's hooks, inside the coder's sandbox, or spawn itself, in the
// coder's next prompt). It is a directory:
//
//	pending/<id>.json     a message as spawn posted it: written by spawn alone
//	delivered/<id>.json   a delivery: when, how and in which round
//
// A message is delivered once a delivery of its id exists. The coder's
// sandbox shows pending/ read-only and delivered/ writable (its hooks
// record deliveries there), so what a message says is always spawn's own
// copy: a delivery is only a claim about timing, read without following
// links, its id matched against the messages spawn posted. A message file
// is written whole to a temporary name and renamed into place; a delivery
// is created exclusively, so of two deliverers racing for a message
// exactly one delivers it. An Inbox is safe for concurrent use by
// goroutines and processes.
type Inbox struct {
	dir string
}

// New returns the inbox kept in dir (a run's runs.Paths.InboxDir). It
// touches nothing on disk.
func New(dir string) *Inbox { return &Inbox{dir: dir} }

// Dir returns the inbox's directory.
func (in *Inbox) Dir() string { return in.dir }

// PendingDir is where messages are posted: read-only to the coder.
func (in *Inbox) PendingDir() string { return filepath.Join(in.dir, pendingName) }

// DeliveredDir is where deliveries are recorded: writable by the coder's
// hooks.
func (in *Inbox) DeliveredDir() string { return filepath.Join(in.dir, deliveredName) }

// Prepare creates the inbox's directories, so that a sandbox can bind the
// inbox before anything was posted to it.
func (in *Inbox) Prepare() error {
	for _, d := range []string{in.PendingDir(), in.DeliveredDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create the inbox %s: %w", in.dir, err)
		}
	}
	return nil
}

// messageID matches the ids Post makes: the time to the nanosecond and
// four hex digits.
var messageID = lazy.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9]{9}-[0-9a-f]{4}$`)

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
	if err := writeMessage(in.PendingDir(), m); err != nil {
		return observability.Message{}, fmt.Errorf("post a message to %s: %w", in.dir, err)
	}
	return m, nil
}

// UndeliveredTest is a POSIX shell condition that succeeds when a message
// may wait for delivery: a file in pending/ named like a message whose
// delivery is not in delivered/. It runs no program (the shell's globbing
// and test), so the coder's hooks ask it at every tool call before they
// start spawn's binary to take the messages. It may succeed when nothing
// waits (a delivery made since; Take then finds nothing), never fail when
// a message does: a message is renamed into pending/ whole, under the
// name its delivery takes.
func (in *Inbox) UndeliveredTest() string {
	return fmt.Sprintf(`u=; for m in %s/*%s; do [ -e "$m" ] && [ ! -e %s/"${m##*/}" ] && u=1; done; [ -n "$u" ]`,
		shell.Quote(in.PendingDir()), messageExt, shell.Quote(in.DeliveredDir()))
}

// delivery is what a delivery file says.
type delivery struct {
	At    time.Time              `json:"at"`
	How   observability.Delivery `json:"how"`
	Round int                    `json:"round"`
}

// Take delivers every pending message, oldest first: a delivery stamped
// with now, how and round is created for each, and each is returned. A
// message another deliverer got first is not returned. No pending message
// is no error (nil, nil). On an error, the messages taken so far are
// returned with it.
func (in *Inbox) Take(now time.Time, how observability.Delivery, round int) ([]observability.Message, error) {
	posted, err := in.posted()
	if err != nil {
		return nil, err
	}
	var taken []observability.Message
	for _, m := range posted {
		d := delivery{At: now.UTC(), How: how, Round: round}
		ok, err := in.deliver(m.ID, d)
		if ok {
			m.DeliveredAt, m.How, m.Round = &d.At, d.How, d.Round
			taken = append(taken, m)
		}
		if err != nil {
			return taken, fmt.Errorf("take a message from %s: %w", in.dir, err)
		}
	}
	return taken, nil
}

// deliver creates the delivery of id; ok is false when it existed. The
// delivery is written whole in a file of its own, then linked into place:
// a reader (spawn send --wait) sees it whole or not at all, and of two
// deliverers only one link is made.
func (in *Inbox) deliver(id string, d delivery) (ok bool, err error) {
	b, err := json.Marshal(d)
	if err != nil {
		return false, err
	}
	f, err := os.CreateTemp(in.DeliveredDir(), "."+id+"-*")
	if err != nil {
		return false, err
	}
	defer func() { err = errors.Join(err, os.Remove(f.Name())) }()
	_, err = f.Write(append(b, '\n'))
	if err = errors.Join(err, f.Close()); err != nil {
		return false, err
	}
	err = os.Link(f.Name(), filepath.Join(in.DeliveredDir(), id+messageExt))
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// posted reads the messages spawn posted, oldest first, each with its
// delivery if it has one. A delivery is read without following links, and
// one that does not parse, or says something impossible, counts as a
// delivery of unknown time.
func (in *Inbox) posted() ([]observability.Message, error) {
	names, err := messageNames(in.PendingDir())
	if err != nil {
		return nil, fmt.Errorf("read the inbox %s: %w", in.dir, err)
	}
	var ms []observability.Message
	var root *os.Root
	defer func() {
		if root != nil {
			root.Close()
		}
	}()
	for _, name := range names {
		id := strings.TrimSuffix(name, messageExt)
		if !messageID.MatchString(id) {
			continue
		}
		m, err := readMessage(filepath.Join(in.PendingDir(), name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // withdrawn meanwhile
		}
		if err != nil {
			return ms, fmt.Errorf("read the inbox %s: %w", in.dir, err)
		}
		m.ID = id
		if root == nil {
			if root, err = os.OpenRoot(in.DeliveredDir()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return ms, fmt.Errorf("read the inbox %s: %w", in.dir, err)
			}
		}
		if root != nil {
			m.DeliveredAt, m.How, m.Round = readDelivery(root, name)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// readDelivery reads the delivery name in root: nil when there is none.
// Whatever the name holds counts as a delivery (so that Take and Pending
// agree), but only a small regular file is read, never through a link;
// its time is the entry's own when it names none.
func readDelivery(root *os.Root, name string) (*time.Time, observability.Delivery, int) {
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, "", 0
	}
	at := fi.ModTime().UTC()
	var d delivery
	if !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return &at, "", 0
	}
	b, err := root.ReadFile(name)
	if err != nil || json.Unmarshal(b, &d) != nil {
		return &at, "", 0
	}
	switch d.How {
	case observability.DeliveryToolCall, observability.DeliveryStop, observability.DeliveryPrompt:
	default:
		d.How = ""
	}
	if d.At.IsZero() {
		d.At = at
	}
	return &d.At, d.How, max(d.Round, 0)
}

// DeliveredStamp is the modification time of the inbox's deliveries
// (its delivered directory), which every delivery changes: a delivery
// creates a file there. It is only as fine as the file system's clock
// (milliseconds, seconds on some): deliveries that close together may
// leave one stamp. An inbox without deliveries yet has the zero time.
func (in *Inbox) DeliveredStamp() (time.Time, error) {
	fi, err := os.Stat(in.DeliveredDir())
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read the inbox %s: %w", in.dir, err)
	}
	return fi.ModTime(), nil
}

// Delivered returns the delivered messages, oldest first. An inbox that
// does not exist has none.
func (in *Inbox) Delivered() ([]observability.Message, error) {
	ms, err := in.posted()
	return slices.DeleteFunc(ms, func(m observability.Message) bool { return m.DeliveredAt == nil }), err
}

// Pending returns the messages waiting for the coder, oldest first.
func (in *Inbox) Pending() ([]observability.Message, error) {
	ms, err := in.posted()
	return slices.DeleteFunc(ms, func(m observability.Message) bool { return m.DeliveredAt != nil }), err
}

// Message returns the message id: delivered, or still pending (then its
// DeliveredAt is nil). A message that was never posted, or withdrawn, is
// an error matching fs.ErrNotExist.
func (in *Inbox) Message(id string) (observability.Message, error) {
	if !messageID.MatchString(id) {
		return observability.Message{}, fmt.Errorf("message %s: %w", id, fs.ErrNotExist)
	}
	ms, err := in.posted()
	if err != nil {
		return observability.Message{}, err
	}
	for _, m := range ms {
		if m.ID == id {
			return m, nil
		}
	}
	return observability.Message{}, fmt.Errorf("message %s: %w", id, fs.ErrNotExist)
}

// Withdraw removes the pending message id and reports whether it did:
// false when it was delivered first (or never posted).
func (in *Inbox) Withdraw(id string) (bool, error) {
	m, err := in.Message(id)
	if errors.Is(err, fs.ErrNotExist) || err == nil && m.DeliveredAt != nil {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// A claim that makes the message delivered, so that no deliverer
	// hands it over while it is being withdrawn.
	ok, err := in.deliver(id, delivery{At: time.Now().UTC(), How: "withdrawn"})
	if err != nil || !ok {
		return false, err
	}
	if err := os.Remove(filepath.Join(in.PendingDir(), id+messageExt)); err != nil {
		return false, fmt.Errorf("withdraw message %s: %w", id, err)
	}
	return true, os.Remove(filepath.Join(in.DeliveredDir(), id+messageExt))
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
