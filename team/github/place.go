package github

import (
	"bufio"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Finding is a reviewer's remark about a place in the change, to be posted
// as an inline comment when the place is in the pull request's diff.
type Finding struct {
	// ID is the finding's stable id; it goes into the inline comment's
	// marker, so a posted review maps findings to comment ids.
	ID   string `json:"id"`
	Path string `json:"path"`
	// Line is the (last) line on the new side of the file, 0 when the
	// finding names no line; StartLine, when set and below Line, makes it
	// a range.
	Line      int `json:"line"`
	StartLine int `json:"start_line,omitempty"`
	// Body is the comment's text (the marker is added when posting).
	Body string `json:"body"`
}

// InlineComment is a finding anchored on the diff: Line (and StartLine
// for a range, else 0) are on the RIGHT side, inside one hunk of Path.
type InlineComment struct {
	FindingID string `json:"finding_id,omitempty"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	StartLine int    `json:"start_line,omitempty"`
	Body      string `json:"body"`
	// Narrowed is true when the finding's range did not fit one hunk and
	// was cut down to the part that does (possibly a single line).
	Narrowed bool `json:"narrowed,omitempty"`
}

// Why a finding could not be anchored.
const (
	ReasonNoLine       = "no line"
	ReasonNotInDiff    = "file not changed by the pull request"
	ReasonNoHunks      = "file has no text hunks on the new side (binary, deleted, or too large a diff)"
	ReasonOutsideHunks = "line outside the diff's hunks"
)

// Unplaced is a finding that goes into the review's body, and why.
type Unplaced struct {
	Finding Finding `json:"finding"`
	Reason  string  `json:"reason"`
}

// Placement is where each finding goes: inline or into the body, in the
// order given.
type Placement struct {
	Inline   []InlineComment
	Unplaced []Unplaced
}

// lineRange is a hunk's lines on the new side, first and last inclusive.
type lineRange struct{ first, last int }

// Diff is a pull request's diff reduced to what anchoring needs: each
// file's hunks on the new (RIGHT) side. The zero Diff has no files.
type Diff struct {
	files map[string][]lineRange
}

// DiffFromFiles builds a Diff from list-files entries (their patches).
// A file without a patch is in the diff but has no hunks.
func DiffFromFiles(files []File) (Diff, error) {
	d := Diff{files: map[string][]lineRange{}}
	for _, f := range files {
		hunks, err := parseHunks(f.Patch)
		if err != nil {
			return Diff{}, fmt.Errorf("patch of %s: %w", f.Path, err)
		}
		d.files[f.Path] = hunks
	}
	return d, nil
}

// ParseDiff builds a Diff from a unified diff (git diff, or GitHub's
// application/vnd.github.diff). A deleted file is in the diff with no
// hunks on the new side.
func ParseDiff(unified string) (Diff, error) {
	d := Diff{files: map[string][]lineRange{}}
	var cur string
	var patch strings.Builder
	flush := func() error {
		if cur == "" {
			return nil
		}
		hunks, err := parseHunks(patch.String())
		if err != nil {
			return fmt.Errorf("diff of %s: %w", cur, err)
		}
		d.files[cur] = append(d.files[cur], hunks...)
		patch.Reset()
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(unified))
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	inHunk := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "diff --git "):
			if err := flush(); err != nil {
				return Diff{}, err
			}
			cur, inHunk = gitDiffPath(line), false
		case !inHunk && strings.HasPrefix(line, "+++ "):
			if p := strings.TrimPrefix(line, "+++ "); p != "/dev/null" {
				cur = strings.TrimPrefix(unquotePath(p), "b/")
			}
		case strings.HasPrefix(line, "@@"):
			inHunk = true
			patch.WriteString(line + "\n")
		case inHunk:
			patch.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		return Diff{}, fmt.Errorf("read diff: %w", err)
	}
	if err := flush(); err != nil {
		return Diff{}, err
	}
	return d, nil
}

// gitDiffPath is the new path of a "diff --git a/X b/Y" line.
func gitDiffPath(line string) string {
	rest := strings.TrimPrefix(line, "diff --git ")
	if strings.HasPrefix(rest, `"`) {
		if i := strings.Index(rest, `" `); i >= 0 {
			return strings.TrimPrefix(unquotePath(rest[i+2:]), "b/")
		}
	}
	if i := strings.LastIndex(rest, " b/"); i >= 0 {
		return rest[i+3:]
	}
	return rest
}

func unquotePath(p string) string {
	if strings.HasPrefix(p, `"`) {
		if s, err := strconv.Unquote(p); err == nil {
			return s
		}
	}
	return p
}

// parseHunks reads the "@@ -a,b +c,d @@" headers of a patch.
func parseHunks(patch string) ([]lineRange, error) {
	var out []lineRange
	for _, line := range strings.Split(patch, "\n") {
		if !strings.HasPrefix(line, "@@ ") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[2], "+") {
			return nil, fmt.Errorf("bad hunk header %q", line)
		}
		start, count, err := hunkRange(strings.TrimPrefix(fields[2], "+"))
		if err != nil {
			return nil, fmt.Errorf("bad hunk header %q: %w", line, err)
		}
		if count > 0 {
			out = append(out, lineRange{first: start, last: start + count - 1})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	return out, nil
}

func hunkRange(s string) (start, count int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	count = 1
	if hasCount {
		if count, err = strconv.Atoi(b); err != nil {
			return 0, 0, err
		}
	}
	return start, count, nil
}

// Files returns the paths in the diff, sorted.
func (d Diff) Files() []string {
	out := make([]string, 0, len(d.files))
	for p := range d.files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Contains reports whether line of file is inside one of its hunks on the
// new side: a line a single-line review comment may be anchored on.
func (d Diff) Contains(file string, line int) bool {
	_, ok := hunkOf(d.files[cleanPath(file)], line)
	return ok
}

func hunkOf(hunks []lineRange, line int) (lineRange, bool) {
	for _, h := range hunks {
		if line >= h.first && line <= h.last {
			return h, true
		}
	}
	return lineRange{}, false
}

func cleanPath(p string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return ""
	}
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// Place decides where each finding goes. A finding becomes an inline
// comment on the RIGHT side when its line is inside a hunk of its file; a
// range stays a range only when it lies within one hunk, else it is cut to
// the part inside the hunk holding its last line (or, when that line is
// outside every hunk, inside the last hunk it overlaps), down to a single
// line. Everything else is Unplaced with the reason. Every inline comment
// Place returns is one GitHub accepts on this diff.
func (d Diff) Place(findings []Finding) Placement {
	var out Placement
	for _, f := range findings {
		c, reason := d.place(f)
		if reason != "" {
			out.Unplaced = append(out.Unplaced, Unplaced{Finding: f, Reason: reason})
			continue
		}
		out.Inline = append(out.Inline, c)
	}
	return out
}

func (d Diff) place(f Finding) (InlineComment, string) {
	p := cleanPath(f.Path)
	c := InlineComment{FindingID: f.ID, Path: p, Body: f.Body}
	start, line := f.StartLine, f.Line
	if line <= 0 && start > 0 {
		line, start = start, 0
	}
	if line <= 0 {
		return c, ReasonNoLine
	}
	if start > line {
		start, line = line, start
	}
	if start == line {
		start = 0
	}
	hunks, inDiff := d.files[p]
	switch {
	case !inDiff:
		return c, ReasonNotInDiff
	case len(hunks) == 0:
		return c, ReasonNoHunks
	}
	if h, ok := hunkOf(hunks, line); ok {
		c.Line = line
		if start > 0 {
			c.StartLine = max(start, h.first)
			c.Narrowed = start < h.first
		}
		if c.StartLine == c.Line {
			c.StartLine = 0
		}
		return c, ""
	}
	if start <= 0 {
		return c, ReasonOutsideHunks
	}
	// The last line is outside every hunk: keep the part of the range in
	// the last hunk it overlaps.
	for i := len(hunks) - 1; i >= 0; i-- {
		h := hunks[i]
		if h.first > line || h.last < start {
			continue
		}
		c.Line, c.StartLine, c.Narrowed = min(line, h.last), max(start, h.first), true
		if c.StartLine == c.Line {
			c.StartLine = 0
		}
		return c, ""
	}
	return c, ReasonOutsideHunks
}
