package config

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What spawn init writes loads to exactly the built-in defaults, so the
// template cannot drift from Default().
func TestTemplateLoadsToTheDefaults(t *testing.T) {
	dir := t.TempDir()
	path, err := WriteTemplate(dir)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, File), path)
	loaded, err := Load(context.Background(), Source{RepoDir: dir, Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}})
	cfg, used := loaded.Config, firstFile(loaded)
	require.NoError(t, err)
	assert.Equal(t, path, used)
	assert.Equal(t, Default(), cfg)
}

// Every key a file may set is in the template, at its table, with a
// comment on the line above it (or above the comment block it ends).
func TestTemplateSetsEveryKeyWithAComment(t *testing.T) {
	// Gemini's settings on the Runner type both runners share: not
	// claude's (Validate refuses the tool lists there).
	notClaudes := map[string]bool{"runners.claude.allowed_tools": true, "runners.claude.excluded_tools": true, "runners.claude.approval_mode": true}
	var missing []string
	for key := range keys() {
		if notClaudes[key] {
			continue
		}
		line := keyLine([]byte(Template), key)
		if line == 0 {
			missing = append(missing, key)
			continue
		}
		lines := strings.Split(Template, "\n")
		assert.True(t, line >= 2 && strings.HasPrefix(strings.TrimSpace(lines[line-2]), "#"), "%s (line %d) has no comment above it", key, line)
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "keys the template does not set; add each with its default and a one-line comment to spawn/config/spawn-team.toml and ../../spawn-team.toml")
}

// spawn's own spawn-team.toml and the template are one text.
func TestTemplateIsTheDocumentedConfig(t *testing.T) {
	root, err := os.ReadFile(filepath.Join("..", "..", File))
	require.NoError(t, err)
	assert.Equal(t, string(root), Template, "spawn/config/spawn-team.toml (what spawn init writes) and the repository's spawn-team.toml differ; make them the same")
}

func TestWriteTemplateNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, File)
	require.NoError(t, os.WriteFile(path, []byte("[spawn]\nmax_turns = 7\n"), 0o644))
	_, err := WriteTemplate(dir)
	require.ErrorIs(t, err, ErrExists)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "[spawn]\nmax_turns = 7\n", string(b))
}

// The template is valid TOML a person can read: no line is longer than
// a terminal.
func TestTemplateLinesFitATerminal(t *testing.T) {
	sc := bufio.NewScanner(strings.NewReader(Template))
	for n := 1; sc.Scan(); n++ {
		assert.LessOrEqual(t, len(sc.Text()), 100, "line %d", n)
	}
}
