package inbox

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
)

func TestMessagesSentAreDeliveredOnceInTheOrderSent(t *testing.T) {
	in := New(filepath.Join(t.TempDir(), "inbox"))
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	first, err := in.Post("use tabs", t0)
	require.NoError(t, err)
	second, err := in.Post("and add a test", t0.Add(time.Nanosecond))
	require.NoError(t, err)
	assert.Less(t, first.ID, second.ID)

	pending, err := in.Pending()
	require.NoError(t, err)
	require.Len(t, pending, 2)
	got, err := in.Message(first.ID)
	require.NoError(t, err)
	assert.Nil(t, got.DeliveredAt, "a pending message is not delivered")

	at := t0.Add(time.Second)
	taken, err := in.Take(at, observability.DeliveryToolCall, 2)
	require.NoError(t, err)
	require.Len(t, taken, 2)
	assert.Equal(t, []string{"use tabs", "and add a test"}, []string{taken[0].Text, taken[1].Text})
	assert.Equal(t, at, *taken[0].DeliveredAt)
	assert.Equal(t, observability.DeliveryToolCall, taken[0].How)
	assert.Equal(t, 2, taken[0].Round)
	assert.Equal(t, t0, taken[0].SentAt)

	again, err := in.Take(at, observability.DeliveryStop, 2)
	require.NoError(t, err)
	assert.Empty(t, again, "a message is delivered once")

	delivered, err := in.Delivered()
	require.NoError(t, err)
	assert.Equal(t, taken, delivered)
	got, err = in.Message(second.ID)
	require.NoError(t, err)
	require.NotNil(t, got.DeliveredAt)
	assert.Equal(t, observability.DeliveryToolCall, got.How)
	entries, err := os.ReadDir(filepath.Join(in.Dir(), "delivered"))
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no claim or temporary file is left behind")
}

func TestConcurrentTakersDeliverEachMessageOnce(t *testing.T) {
	in := New(filepath.Join(t.TempDir(), "inbox"))
	const n = 50
	for i := range n {
		_, err := in.Post("message", time.Unix(0, int64(i)))
		require.NoError(t, err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			taken, err := in.Take(time.Now(), observability.DeliveryPrompt, 1)
			assert.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			for _, m := range taken {
				seen[m.ID]++
			}
		}()
	}
	wg.Wait()
	assert.Len(t, seen, n)
	for id, k := range seen {
		assert.Equal(t, 1, k, id)
	}
}

func TestAnInboxNobodyWroteToIsEmpty(t *testing.T) {
	in := New(filepath.Join(t.TempDir(), "inbox"))
	taken, err := in.Take(time.Now(), observability.DeliveryStop, 1)
	require.NoError(t, err)
	assert.Empty(t, taken)
	delivered, err := in.Delivered()
	require.NoError(t, err)
	assert.Empty(t, delivered)
	_, err = in.Message("20261123-090000-000000000-0000")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestAnEmptyMessageIsRefused(t *testing.T) {
	in := New(filepath.Join(t.TempDir(), "inbox"))
	_, err := in.Post(" \n", time.Now())
	assert.ErrorContains(t, err, "empty")
}

func TestAWithdrawnMessageIsNeverDelivered(t *testing.T) {
	in := New(filepath.Join(t.TempDir(), "inbox"))
	m, err := in.Post("too late", time.Now())
	require.NoError(t, err)
	ok, err := in.Withdraw(m.ID)
	require.NoError(t, err)
	assert.True(t, ok)
	taken, err := in.Take(time.Now(), observability.DeliveryPrompt, 1)
	require.NoError(t, err)
	assert.Empty(t, taken)

	m, err = in.Post("on time", time.Now())
	require.NoError(t, err)
	_, err = in.Take(time.Now(), observability.DeliveryPrompt, 1)
	require.NoError(t, err)
	ok, err = in.Withdraw(m.ID)
	require.NoError(t, err)
	assert.False(t, ok, "a delivered message cannot be withdrawn")
}

func TestPrepareMakesTheFoldersOfAnInbox(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "inbox")
	require.NoError(t, New(dir).Prepare())
	assert.DirExists(t, filepath.Join(dir, "pending"))
	assert.DirExists(t, filepath.Join(dir, "delivered"))
}

// What a message says is spawn's own copy: a coder that can write the
// inbox's deliveries (its hooks record them) can neither make up a
// message, nor make spawn read a file through a link, nor give a delivery
// a message that was never posted.
func TestADeliveryIsOnlyAClaimAboutTiming(t *testing.T) {
	in := New(filepath.Join(t.TempDir(), "inbox"))
	m, err := in.Post("the user's words", time.Now())
	require.NoError(t, err)
	secret := filepath.Join(t.TempDir(), "secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"at":"2020-01-01T00:00:00Z","how":"stop","round":7,"text":"SECRET"}`), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(in.DeliveredDir(), m.ID+".json")))
	require.NoError(t, os.WriteFile(filepath.Join(in.DeliveredDir(), "config.json"), []byte(`{"id":"config","text":"FORGED"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(in.DeliveredDir(), "20260101-000000-000000000-0000.json"), []byte(`{"how":"stop"}`), 0o644))

	delivered, err := in.Delivered()
	require.NoError(t, err)
	require.Len(t, delivered, 1, "only a message spawn posted")
	assert.Equal(t, "the user's words", delivered[0].Text)
	assert.NotEqual(t, 7, delivered[0].Round, "the linked file was not read")
	_, err = in.Message("config")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// A delivery changes the stamp of the inbox's deliveries, which the run
// watches as the coder works instead of reading the inbox at every event.
func TestADeliveryChangesTheDeliveredStamp(t *testing.T) {
	in := New(filepath.Join(t.TempDir(), "inbox"))
	stamp, err := in.DeliveredStamp()
	require.NoError(t, err)
	assert.True(t, stamp.IsZero(), "an inbox never written to has no stamp")
	_, err = in.Post("use tabs", time.Now())
	require.NoError(t, err)
	// The stamp as a read long ago saw it: a delivery now must change it,
	// however coarse the file system's clock.
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	require.NoError(t, os.Chtimes(in.DeliveredDir(), old, old))
	stamp, err = in.DeliveredStamp()
	require.NoError(t, err)
	assert.True(t, stamp.Equal(old))

	taken, err := in.Take(time.Now(), observability.DeliveryToolCall, 1)
	require.NoError(t, err)
	require.Len(t, taken, 1)
	after, err := in.DeliveredStamp()
	require.NoError(t, err)
	assert.False(t, after.Equal(old), "the delivery left the stamp as it was")
}

func TestTheUndeliveredTestHoldsExactlyWhileAMessageWaits(t *testing.T) {
	// A folder with a space and a quote, as a user's repository may be.
	in := New(filepath.Join(t.TempDir(), "it's a repo", "inbox"))
	require.NoError(t, in.Prepare())
	waits := func() bool {
		t.Helper()
		err := exec.Command("/bin/sh", "-c", in.UndeliveredTest()).Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return err == nil
	}
	assert.False(t, waits(), "an empty inbox")
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	first, err := in.Post("use tabs", t0)
	require.NoError(t, err)
	assert.True(t, waits(), "a message posted")
	taken, err := in.Take(t0.Add(time.Second), observability.DeliveryToolCall, 1)
	require.NoError(t, err)
	require.Len(t, taken, 1)
	assert.False(t, waits(), "every message delivered")
	second, err := in.Post("and add a test", t0.Add(2*time.Second))
	require.NoError(t, err)
	assert.True(t, waits(), "a second message, the first delivered")
	taken, err = in.Take(t0.Add(3*time.Second), observability.DeliveryStop, 1)
	require.NoError(t, err)
	require.Equal(t, []string{second.ID}, []string{taken[0].ID})
	assert.False(t, waits(), "both delivered")
	assert.NotEqual(t, first.ID, second.ID)
}

// A delivery is seen whole or not at all: `spawn send --wait` reading the
// inbox while the coder's hook delivers never sees a delivery without how
// and when it was made.
func TestADeliveryIsSeenWholeOrNotAtAll(t *testing.T) {
	for i := range 300 {
		in := New(filepath.Join(t.TempDir(), "inbox"))
		_, err := in.Post("message", time.Unix(int64(i), 0))
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			_, err := in.Take(time.Unix(1000, 0), observability.DeliveryStop, 2)
			done <- err
		}()
		for {
			delivered, err := in.Delivered()
			require.NoError(t, err)
			if len(delivered) > 0 {
				require.Equal(t, observability.DeliveryStop, delivered[0].How, "run %d: a delivery seen without how it was made", i)
				require.Equal(t, 2, delivered[0].Round)
				break
			}
		}
		require.NoError(t, <-done)
	}
}
