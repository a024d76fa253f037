package relay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
)

// Context is what legitimately differs between two runs of the same work,
// as the agents' requests show it. A replay compares requests normalised
// with their own run's Context: each value becomes a placeholder, so a
// request of the replay matches the recorded one when nothing else
// differs.
type Context struct {
	// Literals are values by name: the sandbox's path, the agents' private
	// directory, the run's id and branch. Each occurrence of a value is
	// {{name}} in a normalised text, the longest value first.
	Literals map[string]string `json:"literals"`
	// Objects are git object ids, the run's commits in the order it made
	// them: the Nth, whole or abbreviated to 7 hex digits or more, is
	// {{object N}}.
	Objects []string `json:"objects"`
	// Installs are where the run's agent CLIs are installed (gemini lists
	// its built-in skills by path): each is {{install}}, whichever CLI's
	// it is, so that a cassette replays from another checkout, and with a
	// CLI swapped for one installed elsewhere.
	Installs []string `json:"installs,omitempty"`
}

// What every run has of its own, whatever its Context: each match is its
// placeholder in a normalised request.
var volatile = []struct {
	re   *lazy.Regexp
	with string
}{
	// Session and request ids (claude's session id in metadata.user_id,
	// gemini's prompt ids): new in every process.
	{lazy.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`), "{{uuid}}"},
	// claude's device id: made in its private HOME, new in every run.
	{lazy.MustCompile(`[0-9a-f]{64}`), "{{hex}}"},
	// Today's date, as claude (2026-11-26, times too) and gemini
	// (Thursday, November 26, 2026) say it. No \b: in a JSON string a
	// date may follow the n of an escaped newline.
	{lazy.MustCompile(`\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?`), "{{date}}"},
	{lazy.MustCompile(`(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (January|February|March|April|May|June|July|August|September|October|November|December) \d{1,2}, \d{4}\b`), "{{date}}"},
	// How long something took, as a test runner says it in a tool result
	// ("ok example.com/calc 0.003s", "--- FAIL: TestAdd (0.00s)", pytest's
	// "in 0.12s"): a decimal number of seconds or milliseconds, different
	// in every run. (Not \b before it: in a JSON string it may follow the
	// t of an escaped tab.)
	{lazy.MustCompile(`\d+\.\d+m?s\b`), "{{duration}}"},
}

// hexRun finds runs of 7 or more hex digits, each whole: object ids, whole
// or abbreviated. (Not \b: in a JSON string an id may follow the n of an
// escaped newline.)
var hexRun = lazy.MustCompile(`[0-9a-f]{7,}`)

// Normalise is text with what differs between runs replaced: c's
// literals, c's objects, then ids and dates every run has of its own.
func Normalise(text string, c Context) string {
	return normaliseSkills(normaliseVolatile(normaliseObjects(normaliseLiterals(text, c), c)))
}

var (
	skillList = lazy.MustCompile(`(?s)<available_skills>.*?</available_skills>`)
	skill     = lazy.MustCompile(`(?s)<skill>.*?</skill>`)
)

// normaliseSkills puts the skills of each <available_skills> list of
// text in order: gemini finds its skills with a concurrent glob and lists
// them in the order they were found, which differs from run to run.
func normaliseSkills(text string) string {
	return skillList.ReplaceAllStringFunc(text, func(list string) string {
		blocks := skill.FindAllString(list, -1)
		sort.Strings(blocks)
		i := 0
		return skill.ReplaceAllStringFunc(list, func(string) string {
			i++
			return blocks[i-1]
		})
	})
}

// normaliseLiterals replaces c's literals (and, for a path, its form as
// a folder name: claude names a project's folder after its path with
// every other character than a letter or digit made "-"), the longest
// first.
func normaliseLiterals(text string, c Context) string {
	type sub struct{ from, to string }
	var subs []sub
	for name, v := range c.Literals {
		if len(v) < 4 {
			continue // too short to tell from other text
		}
		subs = append(subs, sub{v, "{{" + name + "}}"})
		if strings.HasPrefix(v, "/") {
			subs = append(subs, sub{slug(v), "{{" + name + "-slug}}"})
		}
	}
	for _, v := range c.Installs {
		if len(v) >= 4 {
			subs = append(subs, sub{v, "{{install}}"})
		}
	}
	sort.Slice(subs, func(i, j int) bool {
		if len(subs[i].from) != len(subs[j].from) {
			return len(subs[i].from) > len(subs[j].from)
		}
		if subs[i].from != subs[j].from {
			return subs[i].from < subs[j].from
		}
		return subs[i].to < subs[j].to // the same value under two names: one wins, always the same
	})
	var pairs []string
	for _, s := range subs {
		pairs = append(pairs, s.from, s.to)
	}
	if len(pairs) == 0 {
		return text
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

var notAlnum = lazy.MustCompile(`[^a-zA-Z0-9]`)

func slug(p string) string { return notAlnum.ReplaceAllString(p, "-") }

// normaliseObjects replaces c's objects, whole or abbreviated.
func normaliseObjects(text string, c Context) string {
	if len(c.Objects) == 0 {
		return text
	}
	return hexRun.ReplaceAllStringFunc(text, func(h string) string {
		for i, o := range c.Objects {
			if len(h) <= len(o) && strings.HasPrefix(o, h) {
				return fmt.Sprintf("{{object %d}}", i+1)
			}
		}
		return h
	})
}

func normaliseVolatile(text string) string {
	for _, v := range volatile {
		text = v.re.ReplaceAllString(text, v.with)
	}
	return text
}

// rebase is a recorded answer made for this run: recorded's literals
// (a path the model wrote into a tool call) become live's.
func rebase(text string, recorded, live Context) string {
	text = normaliseLiterals(text, recorded)
	if !strings.Contains(text, "{{") {
		return text
	}
	var pairs []string
	for name, v := range live.Literals {
		pairs = append(pairs, "{{"+name+"}}", v)
		if strings.HasPrefix(v, "/") {
			pairs = append(pairs, "{{"+name+"-slug}}", slug(v))
		}
	}
	if len(live.Installs) > 0 {
		pairs = append(pairs, "{{install}}", live.Installs[0])
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// Readable is a request body laid out to be read and compared line by
// line: JSON indented, and every string broken after each of its \n.
func Readable(body string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(body), "", "  "); err != nil {
		return body
	}
	return strings.ReplaceAll(buf.String(), `\n`, "\\n\n")
}

// Diff is a line diff of a and b, as unified diffs show one: "-" for a's
// lines, "+" for b's, context lines in between, at most maxLines lines.
// It is "" when a and b are the same.
func Diff(a, b string, maxLines int) string {
	if a == b {
		return ""
	}
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	ma, mb := al[pre:len(al)-suf], bl[pre:len(bl)-suf]
	var ops []diffOp
	if len(ma)*len(mb) > 4_000_000 { // too big to align: all out, all in
		for _, l := range ma {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, diffOp{'+', l})
		}
	} else {
		ops = lcsDiff(ma, mb)
	}
	const context = 3
	var out []string
	out = append(out, fmt.Sprintf("@@ line %d @@", pre+1))
	for i := max(0, pre-context); i < pre; i++ {
		out = append(out, " "+al[i])
	}
	// Keep at most `context` unchanged lines between changes.
	eq := 0
	for i, op := range ops {
		if op.kind != ' ' {
			eq = 0
			out = append(out, string(op.kind)+op.line)
			continue
		}
		eq++
		next := len(ops)
		for j := i + 1; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				next = j
				break
			}
		}
		if eq <= context || next-i <= context {
			out = append(out, " "+op.line)
		} else if eq == context+1 {
			out = append(out, "...")
		}
	}
	for i := len(al) - suf; i < len(al)-suf+context && i < len(al); i++ {
		out = append(out, " "+al[i])
	}
	if len(out) > maxLines {
		out = append(out[:maxLines], fmt.Sprintf("... (%d more lines)", len(out)-maxLines))
	}
	return strings.Join(out, "\n")
}

type diffOp struct {
	kind byte // ' ', '-' or '+'
	line string
}

// lcsDiff aligns a and b on their longest common subsequence of lines.
func lcsDiff(a, b []string) []diffOp {
	n, m := len(a), len(b)
	dp := make([][]int32, n+1)
	for i := range dp {
		dp[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i]})
			i++
			j++
		case dp[i+1][j] >= dp[i][j+1]:
			ops = append(ops, diffOp{'-', a[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, diffOp{'-', a[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, diffOp{'+', b[j]})
	}
	return ops
}
