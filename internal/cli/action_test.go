package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
)

// actionlintVersion is the actionlint the test runs (go run at this
// version, from the module cache once fetched).
const actionlintVersion = "v1.7.12"

// TestActionAndExamplesPassActionlint lints every example workflow; the
// action's metadata, through a workflow that uses it as a local action
// with every input; and the action's composite steps, as the steps of a
// workflow job with the action's inputs.
func TestActionAndExamplesPassActionlint(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("actionlint is built with go run; skipped with -short outside CI")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	action, err := os.ReadFile(filepath.Join(root, "action.yml"))
	require.NoError(t, err)

	dir := t.TempDir()
	wf := filepath.Join(dir, ".github", "workflows")
	require.NoError(t, os.MkdirAll(wf, 0o755))
	// actionlint finds the project, and so the local action ./, by .git.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "action.yml"), action, 0o644))
	examples, err := filepath.Glob(filepath.Join(root, "examples", "*.yml"))
	require.NoError(t, err)
	require.Len(t, examples, 3, "the three example workflows")
	files := []string{}
	for _, ex := range examples {
		b, err := os.ReadFile(ex)
		require.NoError(t, err)
		name := filepath.Join(wf, "example-"+filepath.Base(ex))
		require.NoError(t, os.WriteFile(name, b, 0o644))
		files = append(files, name)
	}
	inputs := actionInputs(t, string(action))
	require.Contains(t, inputs, "task")
	for name, text := range map[string]string{
		"uses-action.yml":  usesActionWorkflow(inputs),
		"action-steps.yml": actionStepsWorkflow(t, string(action), inputs),
	} {
		p := filepath.Join(wf, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		files = append(files, p)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	out, err := proc.Run(ctx, proc.Cmd{Path: "go", Args: append([]string{"run", "github.com/rhysd/actionlint/cmd/actionlint@" + actionlintVersion, "-no-color"}, files...),
		Dir: dir, Env: os.Environ()})
	assert.NoError(t, err, "actionlint:\n%s", out)
}

// actionInputs are the names of action.yml's inputs.
func actionInputs(t *testing.T, action string) []string {
	_, rest, ok := strings.Cut(action, "\ninputs:\n")
	require.True(t, ok, "action.yml has inputs")
	block, _, _ := strings.Cut(rest, "\noutputs:\n")
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z][a-z0-9-]*):$`).FindAllStringSubmatch(block, -1) {
		names = append(names, m[1])
	}
	return names
}

// usesActionWorkflow uses the action from the repository's root with every
// input, so that actionlint reads and checks its metadata.
func usesActionWorkflow(inputs []string) string {
	var b strings.Builder
	b.WriteString("name: uses the action\non: push\npermissions: {}\njobs:\n  spawn:\n    runs-on: ubuntu-latest\n    timeout-minutes: 30\n    steps:\n      - uses: actions/checkout@v4\n      - id: spawn\n        uses: ./\n        with:\n")
	for _, in := range inputs {
		fmt.Fprintf(&b, "          %s: x\n", in)
	}
	b.WriteString("      - run: echo \"$VERDICT\"\n        env:\n          VERDICT: ${{ steps.spawn.outputs.verdict }}\n")
	return b.String()
}

// actionStepsWorkflow is the action's composite steps as a job's steps,
// with its inputs as a reusable workflow's, so that actionlint checks their
// expressions and scripts.
func actionStepsWorkflow(t *testing.T, action string, inputs []string) string {
	_, steps, ok := strings.Cut(action, "\n  steps:\n")
	require.True(t, ok, "action.yml has composite steps")
	var b strings.Builder
	b.WriteString("name: the action's steps\non:\n  workflow_call:\n    inputs:\n")
	for _, in := range inputs {
		fmt.Fprintf(&b, "      %s:\n        type: string\n        required: false\n", in)
	}
	b.WriteString("permissions: {}\njobs:\n  action:\n    runs-on: ubuntu-latest\n    timeout-minutes: 30\n    steps:\n")
	for _, line := range strings.Split(strings.TrimRight(steps, "\n"), "\n") {
		if line != "" {
			line = "  " + line
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func TestAddMasksEverySecretLine(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, addMasks(&out, []string{
		"HOME=/root", "ANTHROPIC_API_KEY=sk-ant-canary", "MULTI_SECRET=line one\nline two\n", "DUP_TOKEN=sk-ant-canary", "EMPTY_TOKEN=",
	}))
	assert.Equal(t, "::add-mask::sk-ant-canary\n::add-mask::line one\n::add-mask::line two\n", out.String())
}

func TestAddMasksGoesAroundTheRedactor(t *testing.T) {
	env := []string{"DEPLOY_TOKEN=canary-token-123456"}
	var out bytes.Buffer
	w := redacting{&out, observability.NewRedactor(env)}
	require.NoError(t, addMasks(unredacted(w), env))
	fmt.Fprintln(w, "the token is canary-token-123456")
	assert.Equal(t, "::add-mask::canary-token-123456\nthe token is [REDACTED]\n", out.String())
}

func TestActionOutputsAreDelimited(t *testing.T) {
	pr := "https://github.com/o/r/pull/7"
	rec := observability.New("20261123-0931-ab12", "t", observability.ModePingpong, time.Now())
	rec.Repo, rec.Branch, rec.PRURL = "/src/r", "spawn/x", &pr
	rec.ReviewFeedback = []observability.ReviewFeedback{
		{Iteration: 1, Findings: []observability.Finding{{ID: "a", Status: observability.FindingResolved}, {ID: "b", Status: observability.FindingOpen}}},
		{Iteration: 2, Findings: []observability.Finding{{ID: "b", Status: observability.FindingOpen}}},
	}
	rec.Usage.CostUSD = 0.12345
	rec.Finish(observability.StatusSucceeded, 3, time.Now())
	got := map[string]string{}
	lines := strings.Split(string(actionOutputs(rec)), "\n")
	for i := 0; i+2 < len(lines); i += 3 {
		name, delim, ok := strings.Cut(lines[i], "<<")
		require.True(t, ok, lines[i])
		assert.Equal(t, delim, lines[i+2])
		got[name] = lines[i+1]
	}
	assert.Equal(t, map[string]string{
		"run-id": "20261123-0931-ab12", "status": "succeeded", "verdict": "none", "exit-code": "3", "pr-url": pr, "branch": "spawn/x",
		"rounds": "2", "findings-open": "1", "findings-resolved": "1", "cost-usd": "0.1235",
		"record": "/src/r/.spawn/runs/20261123-0931-ab12/record.json",
	}, got)
}

func TestMarkdownSummaryIsSafeAndBounded(t *testing.T) {
	rec := observability.New("r1", "fix | the <script> bug\nsecond line", observability.ModePingpong, time.Now())
	rec.ReviewFeedback = []observability.ReviewFeedback{{Iteration: 1, Reviewer: observability.LLMGemini, Domain: "all", Verdict: observability.ReviewRequestChanges,
		Findings: []observability.Finding{{ID: "a", Severity: observability.SeverityHigh, File: "a.go", Line: 3, Title: "a | b", Status: observability.FindingOpen}}}}
	rec.Finish(observability.StatusSucceeded, 3, time.Now())
	rec.Verdict = observability.VerdictChangesRequested
	md := markdownSummary(rec)
	assert.Contains(t, md, "## spawn r1: changes requested (exit 3)")
	assert.Contains(t, md, "| task | fix \\| the &lt;script&gt; bug |")
	assert.Contains(t, md, "### Open findings (1)")
	assert.Contains(t, md, "| high | `a.go:3` | **a \\| b**")

	for range 20000 {
		rec.Notes = append(rec.Notes, strings.Repeat("é", 40))
	}
	md = markdownSummary(rec)
	assert.LessOrEqual(t, len(md), maxStepSummary)
	assert.True(t, strings.HasSuffix(md, "the whole record is the `record` output)_\n"))
}

// TestActionDeclaresEveryOutputItWrites keeps action.yml's outputs and
// spawn action's in step, each one read from the step spawn runs in.
func TestActionDeclaresEveryOutputItWrites(t *testing.T) {
	action, err := os.ReadFile("../../action.yml")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(action), "\noutputs:\n")
	require.True(t, ok, "action.yml has outputs")
	block, _, _ := strings.Cut(rest, "\nruns:\n")
	declared := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z][a-z0-9-]*):\n(?:    .*\n)*?    value: \$\{\{ steps\.spawn\.outputs\.([a-z0-9-]+) \}\}$`).FindAllStringSubmatch(block, -1) {
		assert.Equal(t, m[1], m[2], "output %s reads the step's output of its own name", m[1])
		declared[m[1]] = true
	}
	written := map[string]bool{}
	for _, line := range strings.Split(string(actionOutputs(observability.New("r", "t", observability.ModeSolo, time.Now()))), "\n") {
		if name, _, ok := strings.Cut(line, "<<"); ok {
			written[name] = true
		}
	}
	assert.Equal(t, written, declared)
}
