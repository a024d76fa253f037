package githubfake

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// fileDiff is one file of a pull request's diff, as GitHub models it for
// list-files and for anchoring review comments.
type fileDiff struct {
	path     string // new path ("filename")
	previous string // old path of a rename or copy
	status   string // added|removed|modified|renamed|copied|changed
	sha      string // blob of the new side (the old side for a removal)
	binary   bool
	adds     int
	dels     int
	hunks    []*hunk
}

// hunk is one "@@" section of a file's patch.
type hunk struct {
	header             string
	oldStart, oldCount int
	newStart, newCount int
	headerPos          int // position of the header line; the first is 0
	lines              []diffLine
}

// diffLine is one line below a hunk header.
type diffLine struct {
	kind  byte   // ' ', '+', '-' or '\\' ("\ No newline at end of file")
	text  string // the line as in the patch, prefix included
	oldNo int    // line in the old file (0 for additions)
	newNo int    // line in the new file (0 for deletions)
	pos   int    // position: lines below the file's first "@@"
}

// hunkRange is a hunk's header numbers without its lines.
type hunkRange struct {
	oldStart, oldCount, newStart, newCount int
}

// patch is the file's hunks as GitHub's diff-entry "patch": from the first
// "@@" on, without a trailing newline. It is "" for binary files and for
// changes without content (a pure rename, an empty new file).
func (f *fileDiff) patch() string {
	var b strings.Builder
	for i, h := range f.hunks {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(h.header)
		for _, l := range h.lines {
			b.WriteByte('\n')
			b.WriteString(l.text)
		}
	}
	return b.String()
}

// findLine returns the hunk and index of the line numbered line on side
// (RIGHT: the new file, additions and context; LEFT: the old file,
// deletions and context).
func (f *fileDiff) findLine(side string, line int) (*hunk, int, bool) {
	for _, h := range f.hunks {
		for i, l := range h.lines {
			switch {
			case side == "LEFT" && (l.kind == '-' || l.kind == ' ') && l.oldNo == line:
				return h, i, true
			case side != "LEFT" && (l.kind == '+' || l.kind == ' ') && l.newNo == line:
				return h, i, true
			}
		}
	}
	return nil, 0, false
}

// atPosition returns the hunk and line at a diff position. A position on a
// hunk header or a "\ No newline" marker anchors nothing.
func (f *fileDiff) atPosition(pos int) (*hunk, int, bool) {
	for _, h := range f.hunks {
		for i, l := range h.lines {
			if l.pos == pos && l.kind != '\\' {
				return h, i, true
			}
		}
	}
	return nil, 0, false
}

// diffHunk is what GitHub returns as a comment's diff_hunk: the hunk
// header and every line of the hunk down to the commented one.
func (h *hunk) diffHunk(idx int) string {
	var b strings.Builder
	b.WriteString(h.header)
	for _, l := range h.lines[:idx+1] {
		b.WriteByte('\n')
		b.WriteString(l.text)
	}
	return b.String()
}

// lineSide returns the line number and side a hunk line is anchored on.
func (l diffLine) lineSide() (int, string) {
	if l.kind == '-' {
		return l.oldNo, "LEFT"
	}
	return l.newNo, "RIGHT"
}

// parseDiff reads `git diff --raw -z` and the unified diff of the same
// comparison. Both list the files in the same order.
func parseDiff(raw, patch []byte) ([]*fileDiff, error) {
	files, err := parseRaw(raw)
	if err != nil {
		return nil, err
	}
	chunks := splitPatch(patch)
	if len(chunks) != len(files) {
		return nil, fmt.Errorf("raw diff lists %d files, patch %d", len(files), len(chunks))
	}
	for i, chunk := range chunks {
		if err := parseFilePatch(files[i], chunk); err != nil {
			return nil, fmt.Errorf("%s: %w", files[i].path, err)
		}
	}
	return files, nil
}

func parseRaw(raw []byte) ([]*fileDiff, error) {
	fields := strings.Split(string(raw), "\x00")
	var files []*fileDiff
	for i := 0; i < len(fields); i++ {
		meta := fields[i]
		if meta == "" {
			continue
		}
		if !strings.HasPrefix(meta, ":") {
			return nil, fmt.Errorf("raw diff: unexpected %q", meta)
		}
		parts := strings.Fields(meta[1:])
		if len(parts) != 5 || i+1 >= len(fields) {
			return nil, fmt.Errorf("raw diff: bad entry %q", meta)
		}
		oldSHA, newSHA, code := parts[2], parts[3], parts[4]
		f := &fileDiff{sha: newSHA}
		i++
		switch code[0] {
		case 'R', 'C':
			if i+1 >= len(fields) {
				return nil, fmt.Errorf("raw diff: %q lacks its new path", meta)
			}
			f.previous, f.path = fields[i], fields[i+1]
			i++
			f.status = map[byte]string{'R': "renamed", 'C': "copied"}[code[0]]
		case 'A':
			f.path, f.status = fields[i], "added"
		case 'D':
			f.path, f.status, f.sha = fields[i], "removed", oldSHA
		case 'T':
			f.path, f.status = fields[i], "changed"
		default:
			f.path, f.status = fields[i], "modified"
		}
		files = append(files, f)
	}
	return files, nil
}

// splitPatch cuts a unified diff into one chunk of lines per file. Inside a
// hunk every line starts with ' ', '+', '-', '\' or '@', so a line starting
// with "diff --git " always opens a file.
func splitPatch(patch []byte) [][]string {
	var chunks [][]string
	lines := strings.Split(string(bytes.TrimSuffix(patch, []byte("\n"))), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "diff --git ") {
			chunks = append(chunks, nil)
		}
		if len(chunks) > 0 {
			chunks[len(chunks)-1] = append(chunks[len(chunks)-1], l)
		}
	}
	return chunks
}

func parseFilePatch(f *fileDiff, lines []string) error {
	i := 0
	for ; i < len(lines) && !strings.HasPrefix(lines[i], "@@ "); i++ {
		if strings.HasPrefix(lines[i], "Binary files ") || lines[i] == "GIT binary patch" {
			f.binary = true
		}
	}
	pos := 0
	var h *hunk
	var oldNo, newNo int
	for ; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "@@ ") {
			r, err := parseHunkHeader(l)
			if err != nil {
				return err
			}
			if h != nil {
				pos++
			}
			h = &hunk{header: l, oldStart: r.oldStart, oldCount: r.oldCount, newStart: r.newStart, newCount: r.newCount, headerPos: pos}
			f.hunks = append(f.hunks, h)
			oldNo, newNo = r.oldStart, r.newStart
			continue
		}
		if h == nil || l == "" {
			return fmt.Errorf("unexpected patch line %q", l)
		}
		pos++
		dl := diffLine{kind: l[0], text: l, pos: pos}
		switch l[0] {
		case ' ':
			dl.oldNo, dl.newNo = oldNo, newNo
			oldNo++
			newNo++
		case '+':
			dl.newNo = newNo
			newNo++
			f.adds++
		case '-':
			dl.oldNo = oldNo
			oldNo++
			f.dels++
		case '\\':
		default:
			return fmt.Errorf("unexpected patch line %q", l)
		}
		h.lines = append(h.lines, dl)
	}
	return nil
}

// parseHunkHeader reads "@@ -a,b +c,d @@ section"; a missing count is 1.
func parseHunkHeader(line string) (hunkRange, error) {
	var r hunkRange
	rest, ok := strings.CutPrefix(line, "@@ -")
	if !ok {
		return r, fmt.Errorf("bad hunk header %q", line)
	}
	oldPart, rest, ok := strings.Cut(rest, " +")
	if !ok {
		return r, fmt.Errorf("bad hunk header %q", line)
	}
	newPart, _, ok := strings.Cut(rest, " @@")
	if !ok {
		return r, fmt.Errorf("bad hunk header %q", line)
	}
	var err error
	if r.oldStart, r.oldCount, err = parseRange(oldPart); err != nil {
		return r, fmt.Errorf("bad hunk header %q: %w", line, err)
	}
	if r.newStart, r.newCount, err = parseRange(newPart); err != nil {
		return r, fmt.Errorf("bad hunk header %q: %w", line, err)
	}
	return r, nil
}

func parseRange(s string) (int, int, error) {
	startText, countText, hasCount := strings.Cut(s, ",")
	start, err := strconv.Atoi(startText)
	if err != nil {
		return 0, 0, err
	}
	count := 1
	if hasCount {
		if count, err = strconv.Atoi(countText); err != nil {
			return 0, 0, err
		}
	}
	return start, count, nil
}

// mapLine follows a right-side line of the file through later changes
// (zero-context hunks from the comment's commit to the current head). It
// returns the line's new number, or false when a change touched the
// commented range [first, last]: the comment is then outdated.
func mapLine(hunks []hunkRange, first, last, line int) (int, bool) {
	offset := 0
	for _, h := range hunks {
		if h.oldCount == 0 {
			// Pure insertion after line h.oldStart.
			if h.oldStart < first {
				offset += h.newCount
			} else if h.oldStart < last {
				return 0, false
			}
			continue
		}
		hEnd := h.oldStart + h.oldCount - 1
		switch {
		case hEnd < first:
			offset += h.newCount - h.oldCount
		case h.oldStart > last:
		default:
			return 0, false
		}
	}
	return line + offset, true
}
