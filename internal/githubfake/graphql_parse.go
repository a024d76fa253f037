package githubfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/lexer"
	"github.com/vektah/gqlparser/v2/parser"
)

// The fake reads GraphQL documents (operations and fragments) with
// gqlparser's parser, which reads any executable document a client sends.
// What the fake can answer is decided by its schema (graphql_schema.go);
// checking and running an operation is graphql_exec.go's job.

// gqlLoc is a 1-based line and column in the query text.
type gqlLoc struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// locOf is the location of a parsed node.
func locOf(p *ast.Position) gqlLoc {
	if p == nil {
		return gqlLoc{}
	}
	return gqlLoc{Line: p.Line, Column: p.Column}
}

// parseGraphQL parses a query document. A document that does not parse,
// holds no operation or defines a fragment twice is a *gqlError worded
// as GitHub words it, with its location.
func parseGraphQL(src string) (*ast.QueryDocument, *gqlError) {
	doc, err := parser.ParseQuery(&ast.Source{Input: src})
	if err != nil {
		return nil, syntaxError(src, err)
	}
	if len(doc.Operations) == 0 {
		return nil, &gqlError{Message: "Unexpected end of document", Locations: []gqlLoc{endOf(src)}}
	}
	seen := map[string]bool{}
	for _, f := range doc.Fragments {
		if seen[f.Name] {
			return nil, &gqlError{Message: fmt.Sprintf("Fragment name \"%s\" must be unique", f.Name), Locations: []gqlLoc{locOf(f.Position)}}
		}
		seen[f.Name] = true
	}
	return doc, nil
}

// tokenNames are GitHub's names for the tokens a parse error names.
var tokenNames = map[lexer.Type]string{
	lexer.BraceL: "LCURLY", lexer.BraceR: "RCURLY", lexer.ParenL: "LPAREN", lexer.ParenR: "RPAREN",
	lexer.BracketL: "LBRACKET", lexer.BracketR: "RBRACKET", lexer.Colon: "COLON", lexer.Dollar: "VAR_SIGN",
	lexer.Bang: "BANG", lexer.Equals: "EQUALS", lexer.At: "DIR_SIGN", lexer.Spread: "ELLIPSIS",
	lexer.Pipe: "PIPE", lexer.Amp: "AMP", lexer.Int: "INT", lexer.Float: "FLOAT",
	lexer.String: "STRING", lexer.BlockString: "STRING",
}

// keywords are the names GitHub's parser gives a token name of their own.
var keywords = map[string]bool{
	"query": true, "mutation": true, "subscription": true, "fragment": true, "on": true,
	"true": true, "false": true, "null": true,
}

// syntaxError words a parse failure as GitHub does: "Unexpected end of
// document" when the document stops early, else `Parse error on "x"
// (RCURLY) at [1, 7]` naming the token where parsing stopped. A lexical
// error (an unterminated string, a character GraphQL does not know) is
// the lexer's own words.
func syntaxError(src string, err error) *gqlError {
	var ge *gqlerror.Error
	if !errors.As(err, &ge) || len(ge.Locations) == 0 {
		return &gqlError{Message: err.Error()}
	}
	at := gqlLoc{Line: ge.Locations[0].Line, Column: ge.Locations[0].Column}
	plain := &gqlError{Message: ge.Message, Locations: []gqlLoc{at}}
	lx := lexer.New(&ast.Source{Input: src})
	for {
		tok, lerr := lx.ReadToken()
		switch {
		case lerr != nil:
			// The lexer's own error says what is wrong with the text.
			if errors.As(lerr, &ge) && len(ge.Locations) > 0 {
				return &gqlError{Message: ge.Message, Locations: []gqlLoc{{Line: ge.Locations[0].Line, Column: ge.Locations[0].Column}}}
			}
			return plain
		case tok.Kind == lexer.EOF:
			return &gqlError{Message: "Unexpected end of document", Locations: []gqlLoc{locOf(&tok.Pos)}}
		case tok.Kind == lexer.Comment:
			continue
		case tok.Pos.Line > at.Line || (tok.Pos.Line == at.Line && tok.Pos.Column > at.Column):
			return plain
		case tok.Pos.Line == at.Line && tok.Pos.Column == at.Column:
			name, ok := tokenNames[tok.Kind]
			switch {
			case tok.Kind == lexer.Name && keywords[tok.Value]:
				name, ok = strings.ToUpper(tok.Value), true
			case tok.Kind == lexer.Name:
				name, ok = "IDENTIFIER", true
			}
			if !ok {
				return plain
			}
			text := tok.Value
			if text == "" { // a punctuator
				text = tok.Kind.String()
			}
			return &gqlError{Message: fmt.Sprintf("Parse error on %q (%s) at [%d, %d]", text, name, at.Line, at.Column), Locations: []gqlLoc{at}}
		}
	}
}

// endOf is the location of the end of src, where a document that stops
// early ends.
func endOf(src string) gqlLoc {
	lx := lexer.New(&ast.Source{Input: src})
	for {
		tok, err := lx.ReadToken()
		if err != nil || tok.Kind == lexer.EOF {
			return locOf(&tok.Pos)
		}
	}
}

// typeRef turns a schema type string such as "[Foo!]!" into a type.
func typeRef(s string) *ast.Type {
	t := &ast.Type{}
	if rest, ok := strings.CutSuffix(s, "!"); ok {
		t.NonNull, s = true, rest
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		t.Elem = typeRef(s[1 : len(s)-1])
	} else {
		t.NamedType = s
	}
	return t
}

// printValue renders a literal as GitHub quotes it in an error message:
// {threadId: 1, ids: ["a", "b"]}.
func printValue(val *ast.Value) string {
	switch val.Kind {
	case ast.Variable:
		return "$" + val.Raw
	case ast.StringValue, ast.BlockValue:
		return strconv.Quote(val.Raw)
	case ast.NullValue:
		return "null"
	case ast.ListValue:
		parts := make([]string, 0, len(val.Children))
		for _, item := range val.Children {
			parts = append(parts, printValue(item.Value))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case ast.ObjectValue:
		parts := make([]string, 0, len(val.Children))
		for _, fv := range val.Children {
			parts = append(parts, fv.Name+": "+printValue(fv.Value))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		return val.Raw
	}
}

// responseKey is the key a selection answers under: a field's alias (its
// name when it has none), a spread's fragment name, "" for an inline
// fragment.
func responseKey(s ast.Selection) string {
	switch s := s.(type) {
	case *ast.Field:
		return s.Alias
	case *ast.FragmentSpread:
		return s.Name
	}
	return ""
}

// directivesOf are the directives on a selection.
func directivesOf(s ast.Selection) ast.DirectiveList {
	switch s := s.(type) {
	case *ast.Field:
		return s.Directives
	case *ast.FragmentSpread:
		return s.Directives
	case *ast.InlineFragment:
		return s.Directives
	}
	return nil
}

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
	op, gerr := pickOperation(doc, req.OperationName)
	if gerr != nil {
		return nil
	}
	var out []string
	var walk func(ast.SelectionSet)
	seen := map[string]bool{}
	walk = func(sels ast.SelectionSet) {
		for _, s := range sels {
			switch s := s.(type) {
			case *ast.Field:
				out = append(out, s.Name)
			case *ast.InlineFragment:
				walk(s.SelectionSet)
			case *ast.FragmentSpread:
				if f := doc.Fragments.ForName(s.Name); f != nil && !seen[s.Name] {
					seen[s.Name] = true
					walk(f.SelectionSet)
				}
			}
		}
	}
	walk(op.SelectionSet)
	return out
}

// pickOperation picks the operation to run: the one named, or the only
// one.
func pickOperation(d *ast.QueryDocument, name string) (*ast.OperationDefinition, *gqlError) {
	if name == "" {
		if len(d.Operations) > 1 {
			return nil, &gqlError{Message: "An operation name is required"}
		}
		return d.Operations[0], nil
	}
	for _, op := range d.Operations {
		if op.Name == name {
			return op, nil
		}
	}
	return nil, &gqlError{Message: fmt.Sprintf("No operation named %q", name)}
}
