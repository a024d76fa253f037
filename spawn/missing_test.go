package spawn

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/runners"
)

// A CLI that is not on PATH is named with the version spawn pins and the
// folder make agents installs into; when make agents already put it in
// spawn's checkout, the message says where, and how to use it.
func TestAMissingCLINamesItsPinAndWhereMakeAgentsPutIt(t *testing.T) {
	checkout := t.TempDir()
	exe := filepath.Join(checkout, "bin", "spawn")
	require.NoError(t, os.MkdirAll(filepath.Dir(exe), 0o755))
	require.NoError(t, os.WriteFile(exe, nil, 0o755))

	msg := missingCLIFor(exe, adapter(t, "claude"), "claude")
	assert.Equal(t, "the claude CLI (claude) is not on PATH; install the pinned claude 2.1.332 with `make agents` in spawn's checkout and put its agents/node_modules/.bin on PATH, or run `npm install -g @anthropic-ai/claude-code@2.1.332`, or set runners.claude.command", msg)

	bin := filepath.Join(checkout, "agents", "node_modules", ".bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "claude"), []byte("#!/bin/sh\n"), 0o755))
	msg = missingCLIFor(exe, adapter(t, "claude"), "claude")
	assert.Equal(t, "the claude CLI (claude) is not on PATH, but `make agents` installed the pinned claude 2.1.332 at "+filepath.Join(bin, "claude")+": put "+bin+" on PATH, or set runners.claude.command to it", msg)

	msg = missingCLIFor(exe, adapter(t, "gemini"), "/opt/gemini")
	assert.Contains(t, msg, "the gemini CLI /opt/gemini, which runners.gemini.command names, does not exist or cannot run")
	assert.Contains(t, msg, "gemini 0.61.0")
}

// adapter is the registry's adapter of the CLI name.
func adapter(t *testing.T, name string) runners.Adapter {
	t.Helper()
	a, err := runners.NewRegistry().Lookup(name)
	require.NoError(t, err)
	return a
}
