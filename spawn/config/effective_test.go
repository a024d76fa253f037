package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/runners"
)

// A run's configuration, kept in its directory, reads back as it was:
// what spawn replay runs again.
func TestAnEncodedConfigurationReadsBackTheSame(t *testing.T) {
	c := Default()
	c.Team.Reviewers = []string{"gemini", "codex"}
	c.Spawn.IdleTimeout = 90 * time.Second
	c.Sandbox.MaxMemory = 3 << 30
	c.Observability.Cassette = false
	c.Runners.Edit("claude", func(s *runners.Settings) { s.Command = "/opt/claude"; s.MaxRetries = 0 })
	b, err := Encode(c)
	require.NoError(t, err)
	got, err := Decode(b)
	require.NoError(t, err)
	assert.Equal(t, c, got)

	_, err = Decode([]byte(`{"Team":{"Mode":"sideways"}}`))
	assert.Error(t, err, "a configuration that does not validate is refused")
}
