package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Flags reach the options struct whether they come before or after the
// task words; the task comes from words, a file or stdin.
func TestRunFlagsAndTask(t *testing.T) {
	taskFile := filepath.Join(t.TempDir(), "task.md")
	require.NoError(t, os.WriteFile(taskFile, []byte("from a file\n"), 0o644))
	tests := []struct {
		name  string
		args  []string
		stdin string
		check func(t *testing.T, o *runOptions, task string)
	}{
		{"flags first", []string{"run", "--mode", "solo", "--json", "fix", "the", "bug"}, "", func(t *testing.T, o *runOptions, task string) {
			assert.Equal(t, "solo", o.Mode)
			assert.True(t, o.JSON)
			assert.Equal(t, "fix the bug", task)
		}},
		{"flags after the task", []string{"run", "fix", "the", "bug", "--mode=pingpong", "--idle-timeout", "90s", "--base", "main"}, "", func(t *testing.T, o *runOptions, task string) {
			assert.Equal(t, "pingpong", o.Mode)
			assert.Equal(t, "1m30s", o.Limits.IdleTimeout.String())
			assert.Equal(t, "main", o.Base)
			assert.Equal(t, "fix the bug", task)
		}},
		{"double dash keeps dashes", []string{"run", "--json", "--", "remove", "the", "--force", "flag"}, "", func(t *testing.T, o *runOptions, task string) {
			assert.True(t, o.JSON)
			assert.Equal(t, "remove the --force flag", task)
		}},
		{"stdin", []string{"run", "-", "--repo", "/x"}, "from stdin\n", func(t *testing.T, o *runOptions, task string) {
			assert.Equal(t, "/x", o.Repo)
			assert.Equal(t, "from stdin\n", task)
		}},
		{"task file", []string{"run", "--task-file", taskFile}, "", func(t *testing.T, o *runOptions, task string) {
			assert.Equal(t, "from a file\n", task)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *runOptions
			d := &deps{io: IO{In: strings.NewReader(tt.stdin), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}}
			app := newApp(d, func(_ context.Context, _ *deps, o *runOptions) error { got = o; return nil }, runDemo)
			require.NoError(t, app.Run(reorderArgs(app, append([]string{"spawn"}, tt.args...))))
			require.NotNil(t, got)
			task, err := readTask(got, d.io.In)
			require.NoError(t, err)
			tt.check(t, got, task)
		})
	}
}

type result struct {
	code           int
	stdout, stderr string
}

// spawnMain runs spawn in-process with args, as cmd/spawn does.
func spawnMain(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	var out, errw bytes.Buffer
	code := Main(append([]string{"spawn"}, args...), env, strings.NewReader(stdin), &out, &errw)
	return result{code, out.String(), errw.String()}
}
