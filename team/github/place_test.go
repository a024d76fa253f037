package github

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoHunks is app.txt with lines 5 and 30 changed (3 lines of context):
// hunks cover new lines 2-8 and 27-33; new.txt is added with 3 lines;
// old.txt is deleted; img.png is binary.
var twoHunks = []File{
	{Path: "app.txt", Status: "modified", Patch: "@@ -2,7 +2,7 @@ line 1\n line 2\n line 3\n line 4\n-line 5\n+changed 5\n line 6\n line 7\n line 8\n@@ -27,7 +27,7 @@ line 26\n line 27\n line 28\n line 29\n-line 30\n+changed 30\n line 31\n line 32\n line 33"},
	{Path: "new.txt", Status: "added", Patch: "@@ -0,0 +1,3 @@\n+one\n+two\n+three"},
	{Path: "old.txt", Status: "removed", Patch: "@@ -1,2 +0,0 @@\n-a\n-b"},
	{Path: "img.png", Status: "added"},
}

func TestPlaceAnchorsOnlyInsideHunks(t *testing.T) {
	d, err := DiffFromFiles(twoHunks)
	require.NoError(t, err)
	tests := []struct {
		name     string
		f        Finding
		line     int
		start    int
		narrowed bool
		reason   string
	}{
		{name: "changed line", f: Finding{Path: "app.txt", Line: 5}, line: 5},
		{name: "context line", f: Finding{Path: "app.txt", Line: 8}, line: 8},
		{name: "first line of a hunk", f: Finding{Path: "app.txt", Line: 2}, line: 2},
		{name: "between hunks", f: Finding{Path: "app.txt", Line: 15}, reason: ReasonOutsideHunks},
		{name: "before the first hunk", f: Finding{Path: "app.txt", Line: 1}, reason: ReasonOutsideHunks},
		{name: "past the end", f: Finding{Path: "app.txt", Line: 34}, reason: ReasonOutsideHunks},
		{name: "range in one hunk", f: Finding{Path: "app.txt", StartLine: 4, Line: 6}, line: 6, start: 4},
		{name: "range across hunks is cut to the last line's hunk", f: Finding{Path: "app.txt", StartLine: 5, Line: 30}, line: 30, start: 27, narrowed: true},
		{name: "range ending outside keeps the overlap", f: Finding{Path: "app.txt", StartLine: 6, Line: 12}, line: 8, start: 6, narrowed: true},
		{name: "range overlapping one line collapses", f: Finding{Path: "app.txt", StartLine: 8, Line: 12}, line: 8, narrowed: true},
		{name: "range outside every hunk", f: Finding{Path: "app.txt", StartLine: 10, Line: 20}, reason: ReasonOutsideHunks},
		{name: "reversed range", f: Finding{Path: "app.txt", StartLine: 6, Line: 4}, line: 6, start: 4},
		{name: "equal start and line", f: Finding{Path: "app.txt", StartLine: 5, Line: 5}, line: 5},
		{name: "start only", f: Finding{Path: "app.txt", StartLine: 5}, line: 5},
		{name: "added file", f: Finding{Path: "new.txt", Line: 3}, line: 3},
		{name: "dot slash path", f: Finding{Path: "./new.txt", Line: 1}, line: 1},
		{name: "no line", f: Finding{Path: "app.txt"}, reason: ReasonNoLine},
		{name: "file not in the diff", f: Finding{Path: "README.md", Line: 1}, reason: ReasonNotInDiff},
		{name: "deleted file", f: Finding{Path: "old.txt", Line: 1}, reason: ReasonNoHunks},
		{name: "binary file", f: Finding{Path: "img.png", Line: 1}, reason: ReasonNoHunks},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.ID, tt.f.Body = "f1", "body"
			p := d.Place([]Finding{tt.f})
			if tt.reason != "" {
				require.Empty(t, p.Inline)
				require.Len(t, p.Unplaced, 1)
				assert.Equal(t, tt.reason, p.Unplaced[0].Reason)
				assert.Equal(t, tt.f, p.Unplaced[0].Finding)
				return
			}
			require.Empty(t, p.Unplaced)
			require.Len(t, p.Inline, 1)
			c := p.Inline[0]
			assert.Equal(t, "f1", c.FindingID)
			assert.Equal(t, "body", c.Body)
			assert.Equal(t, tt.line, c.Line, "line")
			assert.Equal(t, tt.start, c.StartLine, "start line")
			assert.Equal(t, tt.narrowed, c.Narrowed, "narrowed")
			assert.True(t, d.Contains(c.Path, c.Line))
		})
	}
}

func TestPlaceKeepsOrder(t *testing.T) {
	d, err := DiffFromFiles(twoHunks)
	require.NoError(t, err)
	p := d.Place([]Finding{
		{ID: "a", Path: "app.txt", Line: 30}, {ID: "b", Path: "x.go", Line: 1},
		{ID: "c", Path: "new.txt", Line: 2}, {ID: "d", Path: "app.txt", Line: 20},
	})
	require.Len(t, p.Inline, 2)
	assert.Equal(t, "a", p.Inline[0].FindingID)
	assert.Equal(t, "c", p.Inline[1].FindingID)
	require.Len(t, p.Unplaced, 2)
	assert.Equal(t, "b", p.Unplaced[0].Finding.ID)
	assert.Equal(t, "d", p.Unplaced[1].Finding.ID)
}

func TestParseDiffMatchesPatches(t *testing.T) {
	unified := `diff --git a/app.txt b/app.txt
index 1111111..2222222 100644
--- a/app.txt
+++ b/app.txt
@@ -2,7 +2,7 @@ line 1
 line 2
 line 3
 line 4
-line 5
+changed 5
 line 6
 line 7
 line 8
@@ -27,7 +27,7 @@ line 26
 line 27
 line 28
 line 29
-line 30
+changed 30
 line 31
 line 32
 line 33
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-a
-b
diff --git a/src/a.go b/src/b.go
similarity index 90%
rename from src/a.go
rename to src/b.go
--- a/src/a.go
+++ b/src/b.go
@@ -10 +10,2 @@ func x() {
-	old()
+	new()
+	more()
diff --git a/img.png b/img.png
new file mode 100644
Binary files /dev/null and b/img.png differ
`
	d, err := ParseDiff(unified)
	require.NoError(t, err)
	assert.Equal(t, []string{"app.txt", "img.png", "old.txt", "src/b.go"}, d.Files())
	fromFiles, err := DiffFromFiles(twoHunks[:1])
	require.NoError(t, err)
	assert.Equal(t, fromFiles.files["app.txt"], d.files["app.txt"])
	assert.True(t, d.Contains("src/b.go", 11))
	assert.False(t, d.Contains("src/b.go", 12))
	assert.False(t, d.Contains("old.txt", 1))
	assert.False(t, d.Contains("img.png", 1))

	_, err = ParseDiff("diff --git a/x b/x\n@@ bogus @@\n")
	require.Error(t, err)
}

func TestWithSummaryKeepsTheRestOfTheBody(t *testing.T) {
	tests := []struct{ name, body, summary, want string }{
		{"empty body", "", "s1", SummaryStart + "\ns1\n" + SummaryEnd},
		{"appended after the task", "Task text\n", "s1", "Task text\n\n" + SummaryStart + "\ns1\n" + SummaryEnd},
		{"replaced in place", "Task\n\n" + SummaryStart + "\nold\n" + SummaryEnd + "\n\nA person's note", "new",
			"Task\n\n" + SummaryStart + "\nnew\n" + SummaryEnd + "\n\nA person's note"},
		{"markers in the summary are dropped", "T", "a " + SummaryEnd + " b", "T\n\n" + SummaryStart + "\na  b\n" + SummaryEnd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WithSummary(tt.body, tt.summary)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, got, WithSummary(got, tt.summary), "idempotent")
		})
	}
}

func TestMarkerRoundTrip(t *testing.T) {
	m := Marker{Run: "20260101-abc", Round: 2, Seat: "security", Finding: "sec-1", ReplyTo: 1234}
	s := m.String()
	assert.Equal(t, "<!-- spawn:run=20260101-abc round=2 seat=security finding=sec-1 reply-to=1234 -->", s)
	got, ok := ParseMarker("text\n\n" + s)
	require.True(t, ok)
	assert.Equal(t, m, got)

	review := Marker{Run: "r", Round: 1, Seat: "s"}
	comment := review
	comment.Finding = "f"
	assert.False(t, review.In(comment.Append("x")), "a review's marker does not match its comments")
	assert.True(t, review.In(review.Append("x")))
	assert.Equal(t, "x\n\n"+review.String(), review.Append("x\n"))

	odd := Marker{Run: "a b-->c", Seat: "x--y"}
	assert.NotContains(t, odd.String()[len(markerPrefix):len(odd.String())-4], "--")
	assert.NotContains(t, odd.String(), " b")

	assert.True(t, HasMarker(SummaryStart))
	assert.False(t, HasMarker("plain <!-- note -->"))
	_, ok = ParseMarker(SummaryStart + " no marker")
	assert.False(t, ok)
	assert.Equal(t, "Fix this.", StripMarkers("Fix this.\n\n"+review.String()))
}
