package spawn

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/hook"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs/inbox"
)

// The binary claude runs as a hook is spawn's own: any binary linking this
// package (this test binary too) answers a hook call and exits, before its
// main or TestMain runs.
func TestThisBinaryAnswersAHookCall(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "inbox")
	_, err = inbox.New(dir).Post("the tests are in calc_test.go", time.Now())
	require.NoError(t, err)
	out, err := proc.Run(context.Background(), proc.Cmd{Path: exe, Args: []string{hook.Arg, string(hook.Stop), dir, "1"},
		Stdin: strings.NewReader(`{"session_id":"s","hook_event_name":"Stop","stop_hook_active":false}`)})
	require.NoError(t, err)
	var answer struct{ Decision, Reason string }
	require.NoError(t, json.Unmarshal(out, &answer), "%s", out)
	assert.Equal(t, "block", answer.Decision)
	assert.Contains(t, answer.Reason, "the tests are in calc_test.go")
	delivered, err := inbox.New(dir).Delivered()
	require.NoError(t, err)
	require.Len(t, delivered, 1)
	assert.Equal(t, observability.DeliveryStop, delivered[0].How)

	_, err = proc.Run(context.Background(), proc.Cmd{Path: exe, Args: []string{hook.Arg, "pre-tool-use", dir, "1"}, Stdin: strings.NewReader("{}")})
	var exit *proc.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.Code, "a hook that cannot answer is a non-blocking error for claude, never exit 2")
	assert.Contains(t, exit.Stderr, "unknown event")
}

func TestMessagesAreRecordedInTheOrderDelivered(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	msgs := []observability.Message{
		{ID: "b", DeliveredAt: at(2 * time.Second)},
		{ID: "c", DeliveredAt: at(time.Second)},
		{ID: "a", DeliveredAt: at(2 * time.Second)},
	}
	sortByDelivery(msgs)
	assert.Equal(t, []string{"c", "a", "b"}, []string{msgs[0].ID, msgs[1].ID, msgs[2].ID})
}
