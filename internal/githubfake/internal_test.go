package githubfake

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/ast"
)

const twoHunkPatch = `diff --git a/a.txt b/a.txt
index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,4 @@ ctx
 one
-two
+TWO
+two and a half
 three
@@ -10,2 +11,2 @@
 ten
-eleven
\ No newline at end of file
+ELEVEN
\ No newline at end of file
diff --git a/b.bin b/b.bin
new file mode 100644
index 0000000000000000000000000000000000000000..3333333333333333333333333333333333333333
Binary files /dev/null and b/b.bin differ
`

const twoHunkRaw = ":100644 100644 1111111111111111111111111111111111111111 2222222222222222222222222222222222222222 M\x00a.txt\x00" +
	":000000 100644 0000000000000000000000000000000000000000 3333333333333333333333333333333333333333 A\x00b.bin\x00"

func TestDiffPositionsCountHunkHeadersAfterTheFirst(t *testing.T) {
	t.Parallel()
	files, err := parseDiff([]byte(twoHunkRaw), []byte(twoHunkPatch))
	require.NoError(t, err)
	require.Len(t, files, 2)
	a := files[0]
	assert.Equal(t, 2, a.dels)
	assert.Equal(t, 3, a.adds)

	cases := []struct {
		side       string
		line, pos  int
		hunkHeader string
	}{
		{"RIGHT", 1, 1, "@@ -1,3 +1,4 @@ ctx"},
		{"LEFT", 2, 2, "@@ -1,3 +1,4 @@ ctx"},
		{"RIGHT", 2, 3, "@@ -1,3 +1,4 @@ ctx"},
		{"RIGHT", 4, 5, "@@ -1,3 +1,4 @@ ctx"},
		{"RIGHT", 11, 7, "@@ -10,2 +11,2 @@"}, // the second header is position 6
		{"RIGHT", 12, 10, "@@ -10,2 +11,2 @@"},
	}
	for _, tc := range cases {
		h, idx, ok := a.findLine(tc.side, tc.line)
		require.True(t, ok, "%s %d", tc.side, tc.line)
		assert.Equal(t, tc.pos, h.lines[idx].pos, "%s %d", tc.side, tc.line)
		assert.Equal(t, tc.hunkHeader, h.header)
	}
	_, _, ok := a.findLine("RIGHT", 6)
	assert.False(t, ok, "line 6 is outside both hunks")
	_, _, ok = a.findLine("LEFT", 3)
	assert.True(t, ok, "a context line is on both sides")
	_, _, ok = a.atPosition(6)
	assert.False(t, ok, "a hunk header anchors nothing")
	h, idx, ok := a.atPosition(3)
	require.True(t, ok)
	line, side := h.lines[idx].lineSide()
	assert.Equal(t, 2, line)
	assert.Equal(t, "RIGHT", side)
	assert.Equal(t, "@@ -1,3 +1,4 @@ ctx\n one\n-two\n+TWO", h.diffHunk(idx))
	assert.True(t, strings.HasSuffix(a.patch(), "\\ No newline at end of file"))

	b := files[1]
	assert.True(t, b.binary)
	assert.Equal(t, "added", b.status)
	assert.Empty(t, b.patch())
}

func TestMapLineFollowsACommentThroughLaterChanges(t *testing.T) {
	t.Parallel()
	hunks := []hunkRange{
		{oldStart: 2, oldCount: 0, newStart: 3, newCount: 2},  // two lines inserted after line 2
		{oldStart: 8, oldCount: 1, newStart: 10, newCount: 1}, // line 8 rewritten
		{oldStart: 20, oldCount: 3, newStart: 22, newCount: 0},
	}
	cases := []struct {
		first, last int
		want        int
		ok          bool
	}{
		{1, 1, 1, true},
		{5, 5, 7, true},
		{8, 8, 0, false},
		{6, 9, 0, false},
		{12, 12, 14, true},
		{21, 21, 0, false},
		{30, 30, 29, true},
	}
	for _, tc := range cases {
		got, ok := mapLine(hunks, tc.first, tc.last, tc.last)
		assert.Equal(t, tc.ok, ok, "%d-%d", tc.first, tc.last)
		if ok {
			assert.Equal(t, tc.want, got, "%d-%d", tc.first, tc.last)
		}
	}
}

func TestSmallHelpers(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "a", toSentence([]string{"a"}))
	assert.Equal(t, "a and b", toSentence([]string{"a", "b"}))
	assert.Equal(t, "a, b, and c", toSentence([]string{"a", "b", "c"}))
	assert.True(t, pathMatches("/repos/{owner}/{repo}/pulls/{n}/reviews", "/repos/Acme/app/pulls/1/reviews"))
	assert.True(t, pathMatches("/repos/acme/*/pulls/1", "/repos/ACME/app/pulls/1"))
	assert.False(t, pathMatches("/repos/acme/app", "/repos/acme/app/pulls"))
}

func TestGraphQLParserReadsWhatClientsSend(t *testing.T) {
	t.Parallel()
	doc, gerr := parseGraphQL(`
		# a comment
		query Q($a: [ID!]! = ["x"], $b: Boolean) @dir {
			alias: field(arg: {k: [1, 2.5, "s", ENUM, null, $b]}, s: """
			  block
			    indented
			""") @include(if: true) { ...F ... on T { x } ... { y } }
		}
		fragment F on T { z }`)
	require.Nil(t, gerr)
	require.Len(t, doc.Operations, 1)
	op := doc.Operations[0]
	assert.Equal(t, "Q", op.Name)
	assert.Equal(t, "[ID!]!", op.VariableDefinitions[0].Type.String())
	sel := op.SelectionSet[0].(*ast.Field)
	assert.Equal(t, "alias", responseKey(sel))
	assert.Equal(t, "field", sel.Name)
	assert.Equal(t, `{k: [1, 2.5, "s", ENUM, null, $b]}`, printValue(sel.Arguments[0].Value))
	assert.Equal(t, "block\n  indented", sel.Arguments[1].Value.Raw)
	assert.Len(t, sel.SelectionSet, 3)
	assert.NotNil(t, doc.Fragments.ForName("F"))
	assert.Equal(t, "[Foo!]!", typeRef("[Foo!]!").String())

	// Syntax errors are worded and placed as GitHub words them.
	for _, c := range []struct{ src, msg string }{
		{"{", "Unexpected end of document"},
		{"fragment F on T { a }", "Unexpected end of document"},
		{"query { a(b: ) }", `Parse error on ")" (RPAREN) at [1, 14]`},
		{"{ a } }", `Parse error on "}" (RCURLY) at [1, 7]`},
		{"fragment on on T { a }", `Parse error on "on" (ON) at [1, 10]`},
		{"{ a }\nfoo { b }", `Parse error on "foo" (IDENTIFIER) at [2, 1]`},
		{"{ a } fragment F on T { a } fragment F on T { b }", `Fragment name "F" must be unique`},
		{`{ a(b: "x`, "Unterminated string."},
	} {
		_, gerr := parseGraphQL(c.src)
		if assert.NotNil(t, gerr, "%q", c.src) {
			assert.Equal(t, c.msg, gerr.Message, "%q", c.src)
			assert.Len(t, gerr.Locations, 1, "%q", c.src)
		}
	}
}

// TestAResponseThatBreaksTheDescriptionFailsTheTest proves the guard that
// keeps the fake from drifting: a reply missing a required field is
// reported through errorf.
func TestAResponseThatBreaksTheDescriptionFailsTheTest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var reported []string
	s, err := Start(WithDir(t.TempDir()), WithErrorf(func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, format)
	}))
	require.NoError(t, err)
	defer s.Close()
	rt, params, err := s.sp.route(http.MethodGet, "/repos/acme/app/pulls/1/reviews/2", "")
	require.NoError(t, err)
	in, err := validationInput(rt, params, http.MethodGet, "/repos/acme/app/pulls/1/reviews/2", "", http.Header{}, nil)
	require.NoError(t, err)
	c := &call{s: s, r: httptest.NewRequest(http.MethodGet, "/repos/acme/app/pulls/1/reviews/2", nil),
		path: "/repos/acme/app/pulls/1/reviews/2", op: rt.Operation.OperationID, in: in}

	s.mu.Lock()
	s.checkResponse(c, ok(map[string]any{"id": 2, "state": "APPROVED"})) // no node_id, user, body, ...
	s.mu.Unlock()
	problems := s.Problems()
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0], "does not match the OpenAPI description")
	assert.Contains(t, problems[0], "pulls/get-review")

	// An operation outside the subset is reported too, and answered 404.
	srv := httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/repos/acme/app/merges", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Len(t, s.Problems(), 2)
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, reported, 2)
}
