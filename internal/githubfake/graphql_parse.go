package githubfake

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is a parser for the GraphQL query language (executable
// documents: operations and fragments), enough for any query a client
// sends. What the fake can answer is decided by its schema, not here.

type gqlDoc struct {
	ops   []*gqlOp
	frags map[string]*gqlFragment
}

type gqlOp struct {
	kind string // query | mutation | subscription
	name string
	vars []*gqlVarDef
	sel  []*gqlSel
	loc  gqlLoc
}

type gqlFragment struct {
	name     string
	typeCond string
	sel      []*gqlSel
	loc      gqlLoc
}

type gqlVarDef struct {
	name string
	typ  *gqlType
	def  *gqlValue
	loc  gqlLoc
}

// gqlType is a type reference: Name, [T] or T!.
type gqlType struct {
	name    string
	elem    *gqlType
	nonNull bool
}

func (t *gqlType) String() string {
	s := t.name
	if t.elem != nil {
		s = "[" + t.elem.String() + "]"
	}
	if t.nonNull {
		s += "!"
	}
	return s
}

// parseTypeRef parses a schema type string such as "[Foo!]!".
func parseTypeRef(s string) *gqlType {
	t := &gqlType{}
	if strings.HasSuffix(s, "!") {
		t.nonNull = true
		s = s[:len(s)-1]
	}
	if strings.HasPrefix(s, "[") {
		t.elem = parseTypeRef(s[1 : len(s)-1])
	} else {
		t.name = s
	}
	return t
}

// named is the innermost type name.
func (t *gqlType) named() string {
	for t.elem != nil {
		t = t.elem
	}
	return t.name
}

// Selection kinds.
const (
	selField = iota
	selSpread
	selInline
)

type gqlSel struct {
	kind     int
	alias    string
	name     string // field name, or fragment name for a spread
	args     []*gqlArg
	typeCond string // inline fragment
	sel      []*gqlSel
	dirs     []*gqlDirective
	loc      gqlLoc
}

func (s *gqlSel) key() string {
	if s.alias != "" {
		return s.alias
	}
	return s.name
}

type gqlDirective struct {
	name string
	args []*gqlArg
	loc  gqlLoc
}

type gqlArg struct {
	name  string
	value *gqlValue
	loc   gqlLoc
}

// Value kinds.
const (
	valVar = iota
	valInt
	valFloat
	valString
	valBool
	valNull
	valEnum
	valList
	valObject
)

type gqlValue struct {
	kind   int
	raw    string // variable name, number text, string, enum name
	bool   bool
	list   []*gqlValue
	fields []*gqlArg
	loc    gqlLoc
}

// gqlLoc is a 1-based line and column in the query text.
type gqlLoc struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// gqlSyntaxError is a parse failure, reported as GitHub reports one.
type gqlSyntaxError struct {
	msg string
	loc gqlLoc
}

func (e *gqlSyntaxError) Error() string { return e.msg }

type tokKind int

const (
	tokEOF tokKind = iota
	tokPunct
	tokName
	tokInt
	tokFloat
	tokString
)

var tokNames = map[string]string{
	"{": "LCURLY", "}": "RCURLY", "(": "LPAREN", ")": "RPAREN", "[": "LBRACKET", "]": "RBRACKET",
	":": "COLON", "$": "VAR_SIGN", "!": "BANG", "=": "EQUALS", "@": "DIR_SIGN", "...": "ELLIPSIS", "|": "PIPE", "&": "AMP",
}

type token struct {
	kind tokKind
	val  string
	loc  gqlLoc
}

type gqlParser struct {
	src  string
	pos  int
	line int
	col  int // 1-based column of src[pos]
	tok  token
}

func parseGraphQL(src string) (*gqlDoc, error) {
	p := &gqlParser{src: src, line: 1, col: 1}
	if err := p.next(); err != nil {
		return nil, err
	}
	doc := &gqlDoc{frags: map[string]*gqlFragment{}}
	for p.tok.kind != tokEOF {
		switch {
		case p.isPunct("{"):
			loc := p.tok.loc
			sel, err := p.selectionSet()
			if err != nil {
				return nil, err
			}
			doc.ops = append(doc.ops, &gqlOp{kind: "query", sel: sel, loc: loc})
		case p.tok.kind == tokName && (p.tok.val == "query" || p.tok.val == "mutation" || p.tok.val == "subscription"):
			op, err := p.operation()
			if err != nil {
				return nil, err
			}
			doc.ops = append(doc.ops, op)
		case p.tok.kind == tokName && p.tok.val == "fragment":
			f, err := p.fragment()
			if err != nil {
				return nil, err
			}
			if _, dup := doc.frags[f.name]; dup {
				return nil, &gqlSyntaxError{fmt.Sprintf("Fragment name \"%s\" must be unique", f.name), f.loc}
			}
			doc.frags[f.name] = f
		default:
			return nil, p.unexpected()
		}
	}
	if len(doc.ops) == 0 {
		return nil, &gqlSyntaxError{"Unexpected end of document", p.tok.loc}
	}
	return doc, nil
}

func (p *gqlParser) unexpected() error {
	if p.tok.kind == tokEOF {
		return &gqlSyntaxError{"Unexpected end of document", p.tok.loc}
	}
	name := "IDENTIFIER"
	switch p.tok.kind {
	case tokPunct:
		name = tokNames[p.tok.val]
	case tokInt:
		name = "INT"
	case tokFloat:
		name = "FLOAT"
	case tokString:
		name = "STRING"
	}
	return &gqlSyntaxError{fmt.Sprintf("Parse error on %q (%s) at [%d, %d]", p.tok.val, name, p.tok.loc.Line, p.tok.loc.Column), p.tok.loc}
}

func (p *gqlParser) isPunct(s string) bool { return p.tok.kind == tokPunct && p.tok.val == s }

func (p *gqlParser) expectPunct(s string) error {
	if !p.isPunct(s) {
		return p.unexpected()
	}
	return p.next()
}

func (p *gqlParser) name() (string, gqlLoc, error) {
	if p.tok.kind != tokName {
		return "", p.tok.loc, p.unexpected()
	}
	n, loc := p.tok.val, p.tok.loc
	return n, loc, p.next()
}

func (p *gqlParser) operation() (*gqlOp, error) {
	op := &gqlOp{kind: p.tok.val, loc: p.tok.loc}
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokName {
		op.name = p.tok.val
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	if p.isPunct("(") {
		if err := p.next(); err != nil {
			return nil, err
		}
		for !p.isPunct(")") {
			vd := &gqlVarDef{loc: p.tok.loc}
			if err := p.expectPunct("$"); err != nil {
				return nil, err
			}
			n, _, err := p.name()
			if err != nil {
				return nil, err
			}
			vd.name = n
			if err := p.expectPunct(":"); err != nil {
				return nil, err
			}
			if vd.typ, err = p.typeRef(); err != nil {
				return nil, err
			}
			if p.isPunct("=") {
				if err := p.next(); err != nil {
					return nil, err
				}
				if vd.def, err = p.value(true); err != nil {
					return nil, err
				}
			}
			if _, err := p.directives(); err != nil {
				return nil, err
			}
			op.vars = append(op.vars, vd)
		}
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	if _, err := p.directives(); err != nil {
		return nil, err
	}
	sel, err := p.selectionSet()
	if err != nil {
		return nil, err
	}
	op.sel = sel
	return op, nil
}

func (p *gqlParser) fragment() (*gqlFragment, error) {
	f := &gqlFragment{loc: p.tok.loc}
	if err := p.next(); err != nil {
		return nil, err
	}
	n, _, err := p.name()
	if err != nil {
		return nil, err
	}
	if n == "on" {
		return nil, &gqlSyntaxError{"Parse error on \"on\" (ON) at " + fmt.Sprintf("[%d, %d]", f.loc.Line, f.loc.Column), f.loc}
	}
	f.name = n
	if p.tok.kind != tokName || p.tok.val != "on" {
		return nil, p.unexpected()
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	if f.typeCond, _, err = p.name(); err != nil {
		return nil, err
	}
	if _, err := p.directives(); err != nil {
		return nil, err
	}
	if f.sel, err = p.selectionSet(); err != nil {
		return nil, err
	}
	return f, nil
}

func (p *gqlParser) typeRef() (*gqlType, error) {
	t := &gqlType{}
	if p.isPunct("[") {
		if err := p.next(); err != nil {
			return nil, err
		}
		elem, err := p.typeRef()
		if err != nil {
			return nil, err
		}
		t.elem = elem
		if err := p.expectPunct("]"); err != nil {
			return nil, err
		}
	} else {
		n, _, err := p.name()
		if err != nil {
			return nil, err
		}
		t.name = n
	}
	if p.isPunct("!") {
		t.nonNull = true
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (p *gqlParser) selectionSet() ([]*gqlSel, error) {
	if err := p.expectPunct("{"); err != nil {
		return nil, err
	}
	var out []*gqlSel
	for !p.isPunct("}") {
		s, err := p.selection()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, p.unexpected()
	}
	return out, p.next()
}

func (p *gqlParser) selection() (*gqlSel, error) {
	loc := p.tok.loc
	if p.isPunct("...") {
		if err := p.next(); err != nil {
			return nil, err
		}
		if p.tok.kind == tokName && p.tok.val != "on" {
			n, _, err := p.name()
			if err != nil {
				return nil, err
			}
			dirs, err := p.directives()
			if err != nil {
				return nil, err
			}
			return &gqlSel{kind: selSpread, name: n, dirs: dirs, loc: loc}, nil
		}
		s := &gqlSel{kind: selInline, loc: loc}
		if p.tok.kind == tokName && p.tok.val == "on" {
			if err := p.next(); err != nil {
				return nil, err
			}
			n, _, err := p.name()
			if err != nil {
				return nil, err
			}
			s.typeCond = n
		}
		var err error
		if s.dirs, err = p.directives(); err != nil {
			return nil, err
		}
		if s.sel, err = p.selectionSet(); err != nil {
			return nil, err
		}
		return s, nil
	}
	n, _, err := p.name()
	if err != nil {
		return nil, err
	}
	s := &gqlSel{kind: selField, name: n, loc: loc}
	if p.isPunct(":") {
		if err := p.next(); err != nil {
			return nil, err
		}
		s.alias = n
		if s.name, _, err = p.name(); err != nil {
			return nil, err
		}
	}
	if p.isPunct("(") {
		if s.args, err = p.arguments(false); err != nil {
			return nil, err
		}
	}
	if s.dirs, err = p.directives(); err != nil {
		return nil, err
	}
	if p.isPunct("{") {
		if s.sel, err = p.selectionSet(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (p *gqlParser) directives() ([]*gqlDirective, error) {
	var out []*gqlDirective
	for p.isPunct("@") {
		d := &gqlDirective{loc: p.tok.loc}
		if err := p.next(); err != nil {
			return nil, err
		}
		n, _, err := p.name()
		if err != nil {
			return nil, err
		}
		d.name = n
		if p.isPunct("(") {
			if d.args, err = p.arguments(false); err != nil {
				return nil, err
			}
		}
		out = append(out, d)
	}
	return out, nil
}

func (p *gqlParser) arguments(constant bool) ([]*gqlArg, error) {
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	var out []*gqlArg
	for !p.isPunct(")") {
		n, loc, err := p.name()
		if err != nil {
			return nil, err
		}
		if err := p.expectPunct(":"); err != nil {
			return nil, err
		}
		v, err := p.value(constant)
		if err != nil {
			return nil, err
		}
		out = append(out, &gqlArg{name: n, value: v, loc: loc})
	}
	if len(out) == 0 {
		return nil, p.unexpected()
	}
	return out, p.next()
}

func (p *gqlParser) value(constant bool) (*gqlValue, error) {
	v := &gqlValue{loc: p.tok.loc}
	switch {
	case p.isPunct("$") && !constant:
		if err := p.next(); err != nil {
			return nil, err
		}
		n, _, err := p.name()
		if err != nil {
			return nil, err
		}
		v.kind, v.raw = valVar, n
		return v, nil
	case p.isPunct("["):
		if err := p.next(); err != nil {
			return nil, err
		}
		v.kind = valList
		for !p.isPunct("]") {
			item, err := p.value(constant)
			if err != nil {
				return nil, err
			}
			v.list = append(v.list, item)
		}
		return v, p.next()
	case p.isPunct("{"):
		if err := p.next(); err != nil {
			return nil, err
		}
		v.kind = valObject
		for !p.isPunct("}") {
			n, loc, err := p.name()
			if err != nil {
				return nil, err
			}
			if err := p.expectPunct(":"); err != nil {
				return nil, err
			}
			fv, err := p.value(constant)
			if err != nil {
				return nil, err
			}
			v.fields = append(v.fields, &gqlArg{name: n, value: fv, loc: loc})
		}
		return v, p.next()
	case p.tok.kind == tokInt:
		v.kind, v.raw = valInt, p.tok.val
	case p.tok.kind == tokFloat:
		v.kind, v.raw = valFloat, p.tok.val
	case p.tok.kind == tokString:
		v.kind, v.raw = valString, p.tok.val
	case p.tok.kind == tokName:
		switch p.tok.val {
		case "true", "false":
			v.kind, v.bool = valBool, p.tok.val == "true"
		case "null":
			v.kind = valNull
		default:
			v.kind, v.raw = valEnum, p.tok.val
		}
	default:
		return nil, p.unexpected()
	}
	return v, p.next()
}

// next reads the next token, skipping white space, commas and comments.
func (p *gqlParser) next() error {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\n':
			p.pos++
			p.line++
			p.col = 1
		case c == ' ' || c == '\t' || c == ',' || c == '\r':
			p.advance(1)
		case c == 0xEF && strings.HasPrefix(p.src[p.pos:], "\uFEFF"):
			p.advance(3)
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.advance(1)
			}
		default:
			return p.lex()
		}
	}
	p.tok = token{kind: tokEOF, loc: gqlLoc{p.line, p.col}}
	return nil
}

func (p *gqlParser) advance(n int) {
	p.pos += n
	p.col += n
}

func (p *gqlParser) lex() error {
	loc := gqlLoc{p.line, p.col}
	rest := p.src[p.pos:]
	c := rest[0]
	switch {
	case strings.HasPrefix(rest, "..."):
		p.tok = token{tokPunct, "...", loc}
		p.advance(3)
	case strings.ContainsRune("!$()[]{}:=@|&", rune(c)):
		p.tok = token{tokPunct, string(c), loc}
		p.advance(1)
	case c == '_' || isLetter(c):
		n := 1
		for n < len(rest) && (rest[n] == '_' || isLetter(rest[n]) || isDigit(rest[n])) {
			n++
		}
		p.tok = token{tokName, rest[:n], loc}
		p.advance(n)
	case c == '-' || isDigit(c):
		n := 1
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		kind := tokInt
		if n < len(rest) && rest[n] == '.' {
			kind = tokFloat
			n++
			for n < len(rest) && isDigit(rest[n]) {
				n++
			}
		}
		if n < len(rest) && (rest[n] == 'e' || rest[n] == 'E') {
			kind = tokFloat
			n++
			if n < len(rest) && (rest[n] == '+' || rest[n] == '-') {
				n++
			}
			for n < len(rest) && isDigit(rest[n]) {
				n++
			}
		}
		if rest[:n] == "-" {
			return &gqlSyntaxError{fmt.Sprintf("Parse error on \"-\" (error) at [%d, %d]", loc.Line, loc.Column), loc}
		}
		p.tok = token{kind, rest[:n], loc}
		p.advance(n)
	case strings.HasPrefix(rest, `"""`):
		end := strings.Index(rest[3:], `"""`)
		for end >= 0 && strings.HasSuffix(rest[3:3+end], `\`) {
			next := strings.Index(rest[3+end+3:], `"""`)
			if next < 0 {
				end = -1
				break
			}
			end += 3 + next
		}
		if end < 0 {
			return &gqlSyntaxError{"Unterminated string", loc}
		}
		raw := rest[3 : 3+end]
		p.tok = token{tokString, blockString(strings.ReplaceAll(raw, `\"""`, `"""`)), loc}
		for _, r := range rest[:end+6] {
			if r == '\n' {
				p.line++
				p.col = 1
			} else {
				p.col++
			}
		}
		p.pos += end + 6
	case c == '"':
		n := 1
		for n < len(rest) && rest[n] != '"' {
			if rest[n] == '\\' {
				n++
			}
			if n < len(rest) && rest[n] == '\n' {
				return &gqlSyntaxError{"Unterminated string", loc}
			}
			n++
		}
		if n >= len(rest) {
			return &gqlSyntaxError{"Unterminated string", loc}
		}
		var s string
		if err := json.Unmarshal([]byte(rest[:n+1]), &s); err != nil {
			return &gqlSyntaxError{"Bad unicode escape in " + strconv.Quote(rest[:n+1]), loc}
		}
		p.tok = token{tokString, s, loc}
		p.col += utf8.RuneCountInString(rest[:n+1])
		p.pos += n + 1
	default:
		return &gqlSyntaxError{fmt.Sprintf("Parse error on %q (error) at [%d, %d]", string(c), loc.Line, loc.Column), loc}
	}
	return nil
}

// blockString removes a block string's common indentation and its blank
// first and last lines.
func blockString(raw string) string {
	lines := strings.Split(strings.ReplaceAll(raw, "\r\n", "\n"), "\n")
	common := -1
	for i, l := range lines {
		if i == 0 {
			continue
		}
		trimmed := strings.TrimLeft(l, " \t")
		if trimmed == "" {
			continue
		}
		if ind := len(l) - len(trimmed); common < 0 || ind < common {
			common = ind
		}
	}
	for i := range lines {
		if i > 0 && common > 0 && len(lines[i]) >= common {
			lines[i] = lines[i][common:]
		}
	}
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// graphQLFields returns the top-level fields of the operation a GraphQL
// request body would run (for the request log and fault matching); nil
// when it does not parse.
func graphQLFields(body []byte) []string {
	var req struct {
		Query         string `json:"query"`
		OperationName string `json:"operationName"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	doc, err := parseGraphQL(req.Query)
	if err != nil {
		return nil
	}
	op, gerr := doc.operation(req.OperationName)
	if gerr != nil {
		return nil
	}
	var out []string
	var walk func([]*gqlSel)
	seen := map[string]bool{}
	walk = func(sels []*gqlSel) {
		for _, s := range sels {
			switch s.kind {
			case selField:
				out = append(out, s.name)
			case selInline:
				walk(s.sel)
			case selSpread:
				if f := doc.frags[s.name]; f != nil && !seen[s.name] {
					seen[s.name] = true
					walk(f.sel)
				}
			}
		}
	}
	walk(op.sel)
	return out
}

// operation picks the operation to run: the one named, or the only one.
func (d *gqlDoc) operation(name string) (*gqlOp, *gqlError) {
	if name == "" {
		if len(d.ops) > 1 {
			return nil, &gqlError{Message: "An operation name is required"}
		}
		return d.ops[0], nil
	}
	for _, op := range d.ops {
		if op.name == name {
			return op, nil
		}
	}
	return nil, &gqlError{Message: fmt.Sprintf("No operation named %q", name)}
}
