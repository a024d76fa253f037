package hook

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs/inbox"
)

func TestTheHookHandsPendingMessagesToTheCoderOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "inbox")
	in := inbox.New(dir)
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	_, err := in.Post("use tabs", t0)
	require.NoError(t, err)
	_, err = in.Post("and add a test", t0.Add(time.Millisecond))
	require.NoError(t, err)

	at := t0.Add(time.Second)
	now := func() time.Time { return at }
	var out, errw bytes.Buffer
	require.NoError(t, reply(PostToolUse, []string{dir, "2"}, strings.NewReader(`{"hook_event_name":"PostToolUse"}`), &out, &errw, now))
	var answer struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &answer))
	assert.Equal(t, "PostToolUse", answer.HookSpecificOutput.HookEventName)
	ctx := answer.HookSpecificOutput.AdditionalContext
	assert.Contains(t, ctx, "spawn send")
	assert.Less(t, strings.Index(ctx, "use tabs"), strings.Index(ctx, "and add a test"), "in the order sent")
	assert.Empty(t, errw.String())

	delivered, err := in.Delivered()
	require.NoError(t, err)
	require.Len(t, delivered, 2)
	for _, m := range delivered {
		assert.Equal(t, observability.DeliveryToolCall, m.How)
		assert.Equal(t, 2, m.Round)
		assert.Equal(t, at, *m.DeliveredAt)
	}

	// Nothing new is pending: the coder stops when it was stopping.
	out.Reset()
	require.NoError(t, reply(Stop, []string{dir, "2"}, strings.NewReader(`{"hook_event_name":"Stop","stop_hook_active":true}`), &out, &errw, now))
	assert.Empty(t, out.String())
}

func TestTheHookNeedsItsInboxAndRound(t *testing.T) {
	in := `{"hook_event_name":"Stop"}`
	var out bytes.Buffer
	assert.Error(t, reply(Stop, nil, strings.NewReader(in), &out, &out, time.Now))
	assert.ErrorContains(t, reply(Stop, []string{t.TempDir(), "two"}, strings.NewReader(in), &out, &out, time.Now), "not a number")
}

func TestMessageText(t *testing.T) {
	assert.Empty(t, MessageText(nil))
	one := MessageText([]observability.Message{{Text: " use tabs\n"}})
	assert.Contains(t, one, "sent you a message")
	assert.True(t, strings.HasSuffix(one, "\n\nuse tabs"), "%q", one)
	two := MessageText([]observability.Message{{Text: "use tabs"}, {Text: "add a test"}})
	assert.Contains(t, two, "sent you messages")
	assert.True(t, strings.HasSuffix(two, "use tabs\n\nadd a test"), "%q", two)
}
