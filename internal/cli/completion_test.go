package cli

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/git"
	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// completionRepo is a git repository whose registry holds runs with ids.
func completionRepo(t *testing.T, ids ...string) string {
	t.Helper()
	dir := t.TempDir()
	_, err := (git.Repo{Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}}).Run(context.Background(), "init", "--quiet")
	require.NoError(t, err)
	reg := runs.Open(filepath.Join(dir, ".spawn"))
	for _, id := range ids {
		run, err := reg.Create(id)
		require.NoError(t, err)
		rec := observability.New(id, "a task", observability.ModeSolo, time.Now())
		rec.Finish(observability.StatusSucceeded, 0, time.Now())
		require.NoError(t, observability.WriteFile(run.RecordPath(), rec, nil))
		require.NoError(t, run.Close())
	}
	return dir
}

func candidates(t *testing.T, words ...string) []string {
	t.Helper()
	r := spawnMain(t, []string{"PATH=" + os.Getenv("PATH")}, "", append([]string{"completion", "--complete", "--"}, words...)...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr, "a Tab never prints errors")
	return strings.Fields(r.stdout)
}

func TestCompletionCandidates(t *testing.T) {
	const older, newer = "20250101-100000-aaaa", "20250102-100000-bbbb"
	dir := completionRepo(t, older, newer)
	ids := []string{newer, older, "last"}

	assert.Subset(t, candidates(t, ""), []string{"run", "show", "logs", "diff", "resume", "send", "clean", "init", "completion", "doctor", "help"})
	assert.Equal(t, []string{"clean", "completion"}, candidates(t, "c"))
	assert.Equal(t, []string{"--force"}, candidates(t, "clean", "--f"))
	assert.Contains(t, candidates(t, "clean", "-"), "--dry-run")
	assert.Equal(t, []string{"--version"}, candidates(t, "--v"))
	assert.Equal(t, []string{"solo", "sequential"}, candidates(t, "run", "--mode", "s"))
	assert.Equal(t, []string{"bash", "fish", "zsh"}, candidates(t, "completion", ""))
	assert.Equal(t, []string{"demo", "diff", "doctor"}, candidates(t, "help", "d"))
	assert.Empty(t, candidates(t, "nope", ""))
	assert.Empty(t, candidates(t, "run", "--repo", ""), "a path is the shell's to complete")

	for _, cmd := range []string{"show", "logs", "diff", "resume", "send", "clean"} {
		assert.Equal(t, ids, candidates(t, cmd, "--repo", dir, ""), cmd)
	}
	assert.Equal(t, []string{newer}, candidates(t, "show", "--repo="+dir, "20250102"))
	assert.Empty(t, candidates(t, "show", "--repo", dir, older, ""), "show takes one run")
	assert.Empty(t, candidates(t, "send", "--repo", dir, older, ""), "send's second argument is the message")
	assert.Equal(t, ids, candidates(t, "clean", "--repo", dir, "--force", older, ""), "clean takes many")
	assert.Empty(t, candidates(t, "show", "--repo", t.TempDir(), ""), "outside a repository: no ids, no error")
}

// spawnOnPath puts the test binary on PATH as spawn, as the completion
// scripts call it.
func spawnOnPath(t *testing.T) []string {
	t.Helper()
	bin := t.TempDir()
	require.NoError(t, os.Symlink(os.Args[0], filepath.Join(bin, "spawn")))
	return []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "SPAWN_TEST_BE_SPAWN=1", "HOME=" + t.TempDir()}
}

func TestBashCompletionScript(t *testing.T) {
	_, err := proc.LookPath("bash", os.Environ())
	require.NoError(t, err, "the completion script is tested in bash")
	ctx := context.Background()
	dir := completionRepo(t, "20250101-100000-aaaa")
	script := filepath.Join(t.TempDir(), "spawn.bash")
	require.NoError(t, os.WriteFile(script, []byte(bashCompletion), 0o644))
	_, err = proc.Run(ctx, proc.Cmd{Path: "bash", Args: []string{"-n", script}, Env: []string{"PATH=" + os.Getenv("PATH")}})
	require.NoError(t, err, "bash -n")

	// What bash does on Tab: COMP_WORDS and COMP_CWORD set, the function
	// the script registered called, COMPREPLY read.
	tab := func(words ...string) []string {
		t.Helper()
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		prog := "source " + script + "\n" +
			"COMP_WORDS=(" + strings.Join(quoted, " ") + ")\n" +
			"COMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n" +
			"fn=$(complete -p spawn | sed -n 's/.*-F \\([^ ]*\\) .*/\\1/p')\n" +
			"$fn spawn\n" +
			"printf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := proc.Run(ctx, proc.Cmd{Path: "bash", Args: []string{"-c", prog}, Dir: dir, Env: spawnOnPath(t)})
		require.NoError(t, err)
		return strings.Fields(string(out))
	}
	assert.Contains(t, tab("spawn", ""), "clean", "a command")
	assert.Equal(t, []string{"clean"}, tab("spawn", "cle"))
	assert.Equal(t, []string{"20250101-100000-aaaa", "last"}, tab("spawn", "show", ""), "a run id, from the repository in the current directory")
	assert.Equal(t, []string{"--purge"}, tab("spawn", "clean", "--pu"))
}

func TestZshAndFishCompletionScripts(t *testing.T) {
	ctx := context.Background()
	for shell, check := range map[string]func(string){
		"zsh": func(s string) {
			assert.True(t, strings.HasPrefix(s, "#compdef spawn\n"))
			assert.Contains(t, s, "compdef _spawn spawn")
			assert.Contains(t, s, `spawn completion --complete -- "${(@)words[2,CURRENT]}"`)
		},
		"fish": func(s string) {
			assert.Contains(t, s, "complete -c spawn -f -a '(__spawn_complete)'")
			assert.Contains(t, s, "spawn completion --complete -- $words[2..-1]")
		},
	} {
		t.Run(shell, func(t *testing.T) {
			r := spawnMain(t, nil, "", "completion", shell)
			require.Equal(t, 0, r.code, r.stderr)
			check(r.stdout)
			if _, err := proc.LookPath(shell, os.Environ()); err != nil {
				return // the text's shape is all that can be checked here
			}
			script := filepath.Join(t.TempDir(), "spawn."+shell)
			require.NoError(t, os.WriteFile(script, []byte(r.stdout), 0o644))
			_, err := proc.Run(ctx, proc.Cmd{Path: shell, Args: []string{"-n", script}, Env: []string{"PATH=" + os.Getenv("PATH")}})
			assert.NoError(t, err, "%s -n", shell)
		})
	}
}

func TestCompletionNeedsOneKnownShell(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		r := spawnMain(t, nil, "", args...)
		assert.Equal(t, 2, r.code, "%v", args)
		assert.Regexp(t, `^spawn: [^\n]+bash, zsh or fish\n$`, r.stderr)
	}
}
