package githubfake

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// gqlError is one entry of a GraphQL response's errors, in GitHub's shape.
type gqlError struct {
	Type       string         `json:"type,omitempty"`
	Path       []any          `json:"path,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty"`
	Locations  []gqlLoc       `json:"locations,omitempty"`
	Message    string         `json:"message"`
}

// gqlObject is a value of an object type: its concrete type and state.
type gqlObject struct {
	typ string
	v   any
}

// orderedMap keeps a response object's keys in selection order.
type orderedMap struct {
	keys []string
	vals map[string]any
}

func (m *orderedMap) set(k string, v any) {
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.vals[k] = v
}

// MarshalJSON writes the keys in selection order.
func (m *orderedMap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range m.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(m.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func gqlErrors(errs ...*gqlError) map[string]any { return map[string]any{"errors": errs} }

// serveGraphQL answers POST /graphql.
func (s *Server) serveGraphQL(c *call) *reply {
	if c.r.Method != http.MethodPost {
		return errorReply(notFound(docGraphQL))
	}
	if c.viewer == nil {
		return errorReply(&apiError{status: http.StatusUnauthorized, body: basicError(
			"This endpoint requires you to be authenticated.", docGraphQLAuth, http.StatusUnauthorized)})
	}
	var req struct {
		Query         any            `json:"query"`
		Variables     map[string]any `json:"variables"`
		OperationName string         `json:"operationName"`
	}
	dec := json.NewDecoder(bytes.NewReader(c.body))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		return errorReply(&apiError{status: http.StatusBadRequest, body: map[string]any{
			"message": "Problems parsing JSON", "documentation_url": docGraphQL}})
	}
	query, isString := req.Query.(string)
	if !isString || strings.TrimSpace(query) == "" {
		return ok(gqlErrors(&gqlError{Message: "A query attribute must be specified and must be a string."}))
	}
	doc, gerr := parseGraphQL(query)
	if gerr != nil {
		return ok(gqlErrors(gerr))
	}
	op, gerr := pickOperation(doc, req.OperationName)
	if gerr != nil {
		return ok(gqlErrors(gerr))
	}
	if op.Operation == ast.Subscription {
		return ok(gqlErrors(&gqlError{Message: "Subscriptions are not supported", Locations: []gqlLoc{locOf(op.Position)}}))
	}
	v := &validator{doc: doc, op: op, used: map[string]bool{}, vars: map[string]*ast.VariableDefinition{}, inFrag: map[string]bool{}}
	if errs := v.run(); len(errs) > 0 {
		return ok(gqlErrors(errs...))
	}
	x := &executor{s: s, c: c, doc: doc}
	vars, errs := coerceVariables(op, req.Variables)
	if len(errs) > 0 {
		return ok(gqlErrors(errs...))
	}
	x.vars = vars
	out := map[string]any{"data": nil}
	// A non-null root field that came out null makes data itself null.
	if data, complete := x.selection(rootType(op), nil, op.SelectionSet, nil); complete {
		out["data"] = data
	}
	if len(x.errs) > 0 {
		out["errors"] = x.errs
	}
	return ok(out)
}

// rootType is the schema type an operation selects from.
func rootType(op *ast.OperationDefinition) string {
	if op.Operation == ast.Mutation {
		return "Mutation"
	}
	return "Query"
}

// validator checks an operation against the schema before anything runs,
// as GitHub does: a query with an unknown field or a bad argument runs not
// at all.
type validator struct {
	doc    *ast.QueryDocument
	op     *ast.OperationDefinition
	errs   []*gqlError
	used   map[string]bool
	vars   map[string]*ast.VariableDefinition
	inFrag map[string]bool
}

func (v *validator) opName() string {
	if v.op.Name == "" {
		return "anonymous " + string(v.op.Operation)
	}
	return v.op.Name
}

func (v *validator) fail(loc gqlLoc, path []any, code, msg string, ext map[string]any) {
	e := &gqlError{Message: msg, Locations: []gqlLoc{loc}}
	if len(path) > 0 {
		e.Path = append([]any(nil), path...)
	}
	if code != "" {
		if ext == nil {
			ext = map[string]any{}
		}
		ext["code"] = code
		e.Extensions = ext
	}
	v.errs = append(v.errs, e)
}

func (v *validator) run() []*gqlError {
	for _, vd := range v.op.VariableDefinitions {
		if _, dup := v.vars[vd.Variable]; dup {
			v.fail(locOf(vd.Position), nil, "variableNotUnique", fmt.Sprintf("There can only be one variable named \"%s\"", vd.Variable), nil)
		}
		v.vars[vd.Variable] = vd
		n := vd.Type.Name()
		if _, input := gqlInputs[n]; !isLeafType(n) && !input {
			v.fail(locOf(vd.Position), nil, "variableRequiresValidType", fmt.Sprintf("%s isn't a valid input type (on $%s)", n, vd.Variable), nil)
		}
	}
	head := string(v.op.Operation)
	if v.op.Name != "" {
		head += " " + v.op.Name
	}
	v.selections(rootType(v.op), v.op.SelectionSet, []any{head})
	for _, vd := range v.op.VariableDefinitions {
		if !v.used[vd.Variable] {
			v.fail(locOf(vd.Position), []any{head}, "variableNotUsed", fmt.Sprintf("Variable $%s is declared by %s but not used", vd.Variable, v.opName()), map[string]any{"variableName": vd.Variable})
		}
	}
	return v.errs
}

func (v *validator) selections(typeName string, sels ast.SelectionSet, path []any) {
	for _, s := range sels {
		v.directives(directivesOf(s), path)
		switch s := s.(type) {
		case *ast.Field:
			v.field(typeName, s, path)
		case *ast.InlineFragment:
			cond := typeName
			if s.TypeCondition != "" {
				cond = s.TypeCondition
			}
			if !v.fragmentType(cond, typeName, locOf(s.Position), path, "") {
				continue
			}
			v.selections(cond, s.SelectionSet, append(path, "... on "+cond))
		case *ast.FragmentSpread:
			fr := v.doc.Fragments.ForName(s.Name)
			if fr == nil {
				v.fail(locOf(s.Position), path, "undefinedFragment", fmt.Sprintf("Fragment %s was used, but not defined", s.Name), map[string]any{"fragmentName": s.Name})
				continue
			}
			if v.inFrag[s.Name] {
				v.fail(locOf(s.Position), path, "infiniteLoop", fmt.Sprintf("Fragment %s contains an infinite loop", s.Name), nil)
				continue
			}
			if !v.fragmentType(fr.TypeCondition, typeName, locOf(s.Position), path, s.Name) {
				continue
			}
			v.inFrag[s.Name] = true
			v.selections(fr.TypeCondition, fr.SelectionSet, append(path, "... "+s.Name))
			delete(v.inFrag, s.Name)
		}
	}
}

func (v *validator) fragmentType(cond, parent string, loc gqlLoc, path []any, name string) bool {
	if _, ok := gqlTypes[cond]; !ok {
		v.fail(loc, path, "undefinedType", fmt.Sprintf("No such type %s, so it can't be a fragment condition", cond), nil)
		return false
	}
	if !overlaps(parent, cond) {
		what := "Fragment on " + cond
		if name != "" {
			what = "Fragment " + name + " on " + cond
		}
		v.fail(loc, path, "cannotSpreadFragment", fmt.Sprintf("%s can't be spread inside %s", what, parent), nil)
		return false
	}
	return true
}

func (v *validator) directives(dirs ast.DirectiveList, path []any) {
	for _, d := range dirs {
		if d.Name != "include" && d.Name != "skip" {
			v.fail(locOf(d.Position), path, "undefinedDirective", fmt.Sprintf("Directive @%s is not defined", d.Name), nil)
			continue
		}
		if len(d.Arguments) != 1 || d.Arguments[0].Name != "if" {
			v.fail(locOf(d.Position), path, "missingRequiredArguments", fmt.Sprintf("Directive '%s' is missing required arguments: if", d.Name), nil)
			continue
		}
		v.value(d.Arguments[0].Value, typeRef("Boolean!"), locOf(d.Arguments[0].Position), path, "Directive '"+d.Name+"'", "if")
	}
}

func (v *validator) field(typeName string, s *ast.Field, path []any) {
	fpath := append(append([]any(nil), path...), s.Alias)
	if s.Name == "__typename" {
		if len(s.SelectionSet) > 0 {
			v.fail(locOf(s.Position), fpath, "selectionMismatch", fmt.Sprintf("Selections can't be made on scalars (field '__typename' returns String! but has selections [%s])", selNames(s.SelectionSet)), nil)
		}
		return
	}
	def, ok := gqlTypes[typeName][s.Name]
	if !ok {
		v.fail(locOf(s.Position), fpath, "undefinedField", fmt.Sprintf("Field '%s' doesn't exist on type '%s'", s.Name, typeName),
			map[string]any{"typeName": typeName, "fieldName": s.Name})
		return
	}
	given := map[string]bool{}
	for _, a := range s.Arguments {
		given[a.Name] = true
		at, ok := def.args[a.Name]
		if !ok {
			v.fail(locOf(a.Position), append(fpath, a.Name), "argumentNotAccepted", fmt.Sprintf("Field '%s' doesn't accept argument '%s'", s.Name, a.Name),
				map[string]any{"name": s.Name, "typeName": "Field", "argumentName": a.Name})
			continue
		}
		v.value(a.Value, typeRef(at), locOf(a.Position), fpath, "Field '"+s.Name+"'", a.Name)
	}
	var missing []string
	for name, at := range def.args {
		if strings.HasSuffix(at, "!") && !given[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		v.fail(locOf(s.Position), fpath, "missingRequiredArguments", fmt.Sprintf("Field '%s' is missing required arguments: %s", s.Name, strings.Join(missing, ", ")),
			map[string]any{"className": "Field", "name": s.Name, "arguments": strings.Join(missing, ", ")})
	}
	named := typeRef(def.typ).Name()
	switch {
	case isLeafType(named) && len(s.SelectionSet) > 0:
		v.fail(locOf(s.Position), fpath, "selectionMismatch", fmt.Sprintf("Selections can't be made on scalars (field '%s' returns %s but has selections [%s])", s.Name, def.typ, selNames(s.SelectionSet)), nil)
	case !isLeafType(named) && len(s.SelectionSet) == 0:
		v.fail(locOf(s.Position), fpath, "selectionMismatch", fmt.Sprintf("Field must have selections (field '%s' returns %s but has no selections. Did you mean '%s { ... }'?)", s.Name, def.typ, s.Name), nil)
	case !isLeafType(named):
		v.selections(named, s.SelectionSet, fpath)
	}
}

func selNames(sels ast.SelectionSet) string {
	var names []string
	for _, s := range sels {
		names = append(names, responseKey(s))
	}
	return strings.Join(names, ", ")
}

// isString reports whether a literal is a string, quoted or a block.
func isString(val *ast.Value) bool {
	return val.Kind == ast.StringValue || val.Kind == ast.BlockValue
}

// value checks a literal (or a variable, also inside lists and input
// objects) against the argument's type.
func (v *validator) value(val *ast.Value, t *ast.Type, loc gqlLoc, path []any, owner, arg string) {
	invalid := func() {
		v.fail(loc, path, "argumentLiteralsIncompatible", fmt.Sprintf("Argument '%s' on %s has an invalid value (%s). Expected type '%s'.", arg, owner, printValue(val), t),
			map[string]any{"typeName": "CoercionError"})
	}
	switch {
	case val.Kind == ast.Variable:
		v.used[val.Raw] = true
		vd := v.vars[val.Raw]
		if vd == nil {
			v.fail(loc, path, "variableNotDefined", fmt.Sprintf("Variable $%s is used by %s but not declared", val.Raw, v.opName()), map[string]any{"variableName": val.Raw})
			return
		}
		if !typeCompatible(vd.Type, t, vd.DefaultValue != nil) {
			what := "Type mismatch"
			if vd.Type.Name() == t.Name() {
				what = "Nullability mismatch"
			}
			v.fail(loc, path, "variableMismatch", fmt.Sprintf("%s on variable $%s and argument %s (%s / %s)", what, val.Raw, arg, vd.Type, t),
				map[string]any{"variableName": val.Raw, "typeName": vd.Type.String(), "argumentName": arg, "errorMessage": what})
		}
	case val.Kind == ast.NullValue:
		if t.NonNull {
			invalid()
		}
	case t.Elem != nil:
		if val.Kind != ast.ListValue {
			v.value(val, t.Elem, loc, path, owner, arg)
			return
		}
		for _, item := range val.Children {
			v.value(item.Value, t.Elem, loc, path, owner, arg)
		}
	case gqlInputs[t.NamedType] != nil:
		fields := gqlInputs[t.NamedType]
		if val.Kind != ast.ObjectValue {
			invalid()
			return
		}
		seen := map[string]bool{}
		for _, fv := range val.Children {
			ft, known := fields[fv.Name]
			if !known {
				invalid()
				return
			}
			seen[fv.Name] = true
			v.value(fv.Value, typeRef(ft), locOf(fv.Position), path, owner, arg)
		}
		for name, ft := range fields {
			if strings.HasSuffix(ft, "!") && !seen[name] {
				invalid()
				return
			}
		}
	case !literalFits(val, t):
		invalid()
	}
}

// typeCompatible reports whether a variable of type have may be used where
// want is expected.
func typeCompatible(have, want *ast.Type, hasDefault bool) bool {
	if want.NonNull && !have.NonNull && !hasDefault {
		return false
	}
	if (have.Elem == nil) != (want.Elem == nil) {
		return false
	}
	if have.Elem != nil {
		return typeCompatible(have.Elem, want.Elem, false)
	}
	return have.NamedType == want.NamedType
}

func literalFits(val *ast.Value, t *ast.Type) bool {
	if val.Kind == ast.Variable {
		return true // checked by the variable rules
	}
	if val.Kind == ast.NullValue {
		return !t.NonNull
	}
	if t.Elem != nil {
		if val.Kind != ast.ListValue {
			return literalFits(val, t.Elem)
		}
		for _, item := range val.Children {
			if !literalFits(item.Value, t.Elem) {
				return false
			}
		}
		return true
	}
	switch name := t.NamedType; {
	case name == "Int":
		if val.Kind != ast.IntValue {
			return false
		}
		n, err := strconv.ParseInt(val.Raw, 10, 64)
		return err == nil && n >= math.MinInt32 && n <= math.MaxInt32
	case name == "Float":
		return val.Kind == ast.IntValue || val.Kind == ast.FloatValue
	case name == "Boolean":
		return val.Kind == ast.BooleanValue
	case name == "ID":
		return isString(val) || val.Kind == ast.IntValue
	case gqlScalars[name]:
		return isString(val)
	case gqlEnums[name] != nil:
		return val.Kind == ast.EnumValue && contains(gqlEnums[name], val.Raw)
	case gqlInputs[name] != nil:
		if val.Kind != ast.ObjectValue {
			return false
		}
		fields := gqlInputs[name]
		seen := map[string]bool{}
		for _, fv := range val.Children {
			ft, ok := fields[fv.Name]
			if !ok || !literalFits(fv.Value, typeRef(ft)) {
				return false
			}
			seen[fv.Name] = true
		}
		for fname, ft := range fields {
			if strings.HasSuffix(ft, "!") && !seen[fname] {
				return false
			}
		}
		return true
	}
	return false
}

// coerceVariables checks the request's variables against the operation's
// declarations and applies defaults.
func coerceVariables(op *ast.OperationDefinition, given map[string]any) (map[string]any, []*gqlError) {
	out := map[string]any{}
	var errs []*gqlError
	for _, vd := range op.VariableDefinitions {
		raw, present := given[vd.Variable]
		if !present && vd.DefaultValue != nil {
			out[vd.Variable] = literalValue(vd.DefaultValue, nil)
			continue
		}
		val, problem := coerceInput(raw, vd.Type)
		if problem != "" {
			errs = append(errs, &gqlError{
				Message:    fmt.Sprintf("Variable $%s of type %s was provided invalid value", vd.Variable, vd.Type),
				Locations:  []gqlLoc{locOf(vd.Position)},
				Extensions: map[string]any{"value": raw, "problems": []any{map[string]any{"path": []any{}, "explanation": problem}}},
			})
			continue
		}
		out[vd.Variable] = val
	}
	return out, errs
}

// coerceInput converts a JSON value to type t; it returns an explanation
// when the value does not fit.
func coerceInput(raw any, t *ast.Type) (any, string) {
	if raw == nil {
		if t.NonNull {
			return nil, "Expected value to not be null"
		}
		return nil, ""
	}
	if t.Elem != nil {
		list, isList := raw.([]any)
		if !isList {
			list = []any{raw}
		}
		out := make([]any, len(list))
		for i, item := range list {
			v, p := coerceInput(item, t.Elem)
			if p != "" {
				return nil, p
			}
			out[i] = v
		}
		return out, ""
	}
	js, err := json.Marshal(raw)
	if err != nil {
		js = []byte(fmt.Sprint(raw))
	}
	bad := fmt.Sprintf("Could not coerce value %s to %s", js, t.NamedType)
	switch name := t.NamedType; {
	case name == "Int":
		n, isNum := raw.(json.Number)
		if !isNum {
			return nil, bad
		}
		i, err := n.Int64()
		if err != nil || i < math.MinInt32 || i > math.MaxInt32 {
			return nil, bad
		}
		return int(i), ""
	case name == "Float":
		n, isNum := raw.(json.Number)
		if !isNum {
			return nil, bad
		}
		fl, err := n.Float64()
		if err != nil {
			return nil, bad
		}
		return fl, ""
	case name == "Boolean":
		b, isBool := raw.(bool)
		if !isBool {
			return nil, bad
		}
		return b, ""
	case name == "ID":
		switch x := raw.(type) {
		case string:
			return x, ""
		case json.Number:
			if _, err := x.Int64(); err == nil {
				return x.String(), ""
			}
		}
		return nil, bad
	case gqlScalars[name]:
		s, isStr := raw.(string)
		if !isStr {
			return nil, bad
		}
		return s, ""
	case gqlEnums[name] != nil:
		s, isStr := raw.(string)
		if !isStr || !contains(gqlEnums[name], s) {
			return nil, fmt.Sprintf("Expected %s to be one of: %s", js, strings.Join(gqlEnums[name], ", "))
		}
		return s, ""
	case gqlInputs[name] != nil:
		m, isObj := raw.(map[string]any)
		if !isObj {
			return nil, fmt.Sprintf("Expected %s to be a key-value object.", js)
		}
		fields := gqlInputs[name]
		out := map[string]any{}
		for k, fv := range m {
			ft, known := fields[k]
			if !known {
				return nil, fmt.Sprintf("Field is not defined on %s", name)
			}
			v, p := coerceInput(fv, typeRef(ft))
			if p != "" {
				return nil, p
			}
			out[k] = v
		}
		for k, ft := range fields {
			if _, present := m[k]; !present && strings.HasSuffix(ft, "!") {
				return nil, "Expected value to not be null"
			}
		}
		return out, ""
	}
	return nil, bad
}

// literalValue converts a literal to a Go value, substituting variables.
func literalValue(val *ast.Value, vars map[string]any) any {
	switch val.Kind {
	case ast.Variable:
		return vars[val.Raw]
	case ast.IntValue:
		n, err := strconv.Atoi(val.Raw)
		if err != nil {
			return val.Raw
		}
		return n
	case ast.FloatValue:
		fl, err := strconv.ParseFloat(val.Raw, 64)
		if err != nil {
			return val.Raw
		}
		return fl
	case ast.StringValue, ast.BlockValue, ast.EnumValue:
		return val.Raw
	case ast.BooleanValue:
		return val.Raw == "true"
	case ast.ListValue:
		out := make([]any, len(val.Children))
		for i, item := range val.Children {
			out[i] = literalValue(item.Value, vars)
		}
		return out
	case ast.ObjectValue:
		out := map[string]any{}
		for _, fv := range val.Children {
			out[fv.Name] = literalValue(fv.Value, vars)
		}
		return out
	default:
		return nil
	}
}

// executor runs a validated operation.
type executor struct {
	s    *Server
	c    *call
	doc  *ast.QueryDocument
	vars map[string]any
	errs []*gqlError
}

// fieldGroup is every selection of one response key, merged.
type fieldGroup struct {
	key    string
	fields []*ast.Field
}

func (x *executor) skipped(dirs ast.DirectiveList) bool {
	for _, d := range dirs {
		cond, _ := literalValue(d.Arguments[0].Value, x.vars).(bool)
		if (d.Name == "skip" && cond) || (d.Name == "include" && !cond) {
			return true
		}
	}
	return false
}

func (x *executor) collect(typeName string, sels ast.SelectionSet, groups []*fieldGroup, index map[string]*fieldGroup) []*fieldGroup {
	for _, s := range sels {
		if x.skipped(directivesOf(s)) {
			continue
		}
		switch s := s.(type) {
		case *ast.Field:
			g := index[s.Alias]
			if g == nil {
				g = &fieldGroup{key: s.Alias}
				index[s.Alias] = g
				groups = append(groups, g)
			}
			g.fields = append(g.fields, s)
		case *ast.InlineFragment:
			if s.TypeCondition == "" || possibleTypes(s.TypeCondition)[typeName] {
				groups = x.collect(typeName, s.SelectionSet, groups, index)
			}
		case *ast.FragmentSpread:
			if fr := x.doc.Fragments.ForName(s.Name); fr != nil && possibleTypes(fr.TypeCondition)[typeName] {
				groups = x.collect(typeName, fr.SelectionSet, groups, index)
			}
		}
	}
	return groups
}

// selection executes sels on an object of the concrete type typeName. It
// returns false when a non-null field came out null: the object is then
// null itself.
func (x *executor) selection(typeName string, obj any, sels ast.SelectionSet, path []any) (*orderedMap, bool) {
	out := &orderedMap{vals: map[string]any{}}
	for _, g := range x.collect(typeName, sels, nil, map[string]*fieldGroup{}) {
		first := g.fields[0]
		fpath := append(append([]any(nil), path...), g.key)
		if first.Name == "__typename" {
			out.set(g.key, typeName)
			continue
		}
		def := gqlTypes[typeName][first.Name]
		args := map[string]any{}
		for _, a := range first.Arguments {
			args[a.Name] = literalValue(a.Value, x.vars)
		}
		val, rerr := x.resolve(typeName, obj, first.Name, args)
		if rerr != nil {
			rerr.Path = fpath
			rerr.Locations = []gqlLoc{locOf(first.Position)}
			x.errs = append(x.errs, rerr)
			val = nil
		}
		var sub ast.SelectionSet
		for _, fs := range g.fields {
			sub = append(sub, fs.SelectionSet...)
		}
		v, good := x.complete(val, typeRef(def.typ), sub, fpath)
		if !good {
			return nil, false
		}
		out.set(g.key, v)
	}
	return out, true
}

// complete shapes a resolved value by its type: lists, objects, leaves,
// and null checks for non-null types.
func (x *executor) complete(val any, t *ast.Type, sels ast.SelectionSet, path []any) (any, bool) {
	if val == nil {
		if t.NonNull {
			return nil, false
		}
		return nil, true
	}
	if t.Elem != nil {
		items, _ := val.([]any)
		out := make([]any, 0, len(items))
		for i, item := range items {
			v, good := x.complete(item, t.Elem, sels, append(append([]any(nil), path...), i))
			if !good {
				if t.NonNull {
					return nil, false
				}
				return nil, true
			}
			out = append(out, v)
		}
		return out, true
	}
	if isLeafType(t.NamedType) {
		return val, true
	}
	o := val.(gqlObject)
	m, good := x.selection(o.typ, o.v, sels, path)
	if !good {
		if t.NonNull {
			return nil, false
		}
		return nil, true
	}
	return m, true
}

func notFoundErr(msg string) *gqlError { return &gqlError{Type: "NOT_FOUND", Message: msg} }

func forbiddenErr(msg string) *gqlError {
	return &gqlError{Type: "FORBIDDEN", Message: msg, Extensions: map[string]any{"saml_failure": false}}
}

func actorObject(a *account) any {
	if a == nil {
		return nil
	}
	return gqlObject{typ: a.typ, v: a}
}

// conn is a resolved connection page.
type conn struct {
	items   []gqlObject
	cursors []string
	total   int
	hasNext bool
	hasPrev bool
}

func cursorFor(i int) string {
	return base64.StdEncoding.EncodeToString([]byte("cursor:v2:" + strconv.Itoa(i+1)))
}

func cursorIndex(cur string) (int, bool) {
	b, err := base64.StdEncoding.DecodeString(cur)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(string(b), "cursor:v2:"))
	if err != nil || !strings.HasPrefix(string(b), "cursor:v2:") || n < 1 {
		return 0, false
	}
	return n - 1, true
}

// paginate applies first/last/after/before as GitHub does, with its
// errors for a missing or excessive page size.
func paginate(name string, all []gqlObject, args map[string]any) (*conn, *gqlError) {
	first, hasFirst := args["first"].(int)
	last, hasLast := args["last"].(int)
	if !hasFirst && !hasLast {
		return nil, &gqlError{Type: "MISSING_PAGINATION_BOUNDARIES",
			Message: fmt.Sprintf("You must provide a `first` or `last` value to properly paginate the `%s` connection.", name)}
	}
	for _, lim := range []struct {
		arg string
		n   int
		set bool
	}{{"first", first, hasFirst}, {"last", last, hasLast}} {
		if !lim.set {
			continue
		}
		if lim.n < 0 {
			return nil, &gqlError{Type: "INVALID_ARGUMENTS", Message: fmt.Sprintf("`%s` on the `%s` connection cannot be less than zero.", lim.arg, name)}
		}
		if lim.n > 100 {
			return nil, &gqlError{Type: "EXCESSIVE_PAGINATION",
				Message: fmt.Sprintf("Requesting %d records on the `%s` connection exceeds the `%s` limit of 100 records.", lim.n, name, lim.arg)}
		}
	}
	start, end := 0, len(all)
	if after, ok := args["after"].(string); ok {
		i, good := cursorIndex(after)
		if !good {
			return nil, &gqlError{Type: "INVALID_CURSOR_ARGUMENTS", Message: fmt.Sprintf("`%s` does not appear to be a valid cursor.", after)}
		}
		start = min(i+1, len(all))
	}
	if before, ok := args["before"].(string); ok {
		i, good := cursorIndex(before)
		if !good {
			return nil, &gqlError{Type: "INVALID_CURSOR_ARGUMENTS", Message: fmt.Sprintf("`%s` does not appear to be a valid cursor.", before)}
		}
		end = max(start, min(i, len(all)))
	}
	if skip, ok := args["skip"].(int); ok && skip > 0 {
		start = min(start+skip, end)
	}
	if hasFirst {
		end = min(end, start+first)
	}
	if hasLast {
		start = max(start, end-last)
	}
	c := &conn{items: all[start:end], total: len(all), hasNext: end < len(all), hasPrev: start > 0}
	for i := start; i < end; i++ {
		c.cursors = append(c.cursors, cursorFor(i))
	}
	return c, nil
}

func (x *executor) resolve(typeName string, obj any, field string, args map[string]any) (any, *gqlError) {
	switch typeName {
	case "Query":
		return x.query(field, args)
	case "Mutation":
		return x.mutation(field, args)
	case "User", "Bot", "Organization":
		return x.actor(obj.(*account), field)
	case "RateLimit":
		b := obj.(*bucket)
		switch field {
		case "cost":
			return 1, nil
		case "limit":
			return b.limit, nil
		case "nodeCount":
			return 0, nil
		case "remaining":
			return max(0, b.limit-b.used), nil
		case "resetAt":
			return ts(b.reset), nil
		case "used":
			return b.used, nil
		}
	case "Repository":
		return x.repository(obj.(*repoState), field, args)
	case "Ref":
		r := obj.(*repoState)
		switch field {
		case "name":
			return r.defaultBranch, nil
		case "prefix":
			return "refs/heads/", nil
		case "target":
			sha, ok, err := r.git.resolveCommit(x.c.ctx, "refs/heads/"+r.defaultBranch)
			if err != nil {
				x.s.problem("graphql Ref.target: %v", err)
				return nil, &gqlError{Message: "Something went wrong while executing your query."}
			}
			if !ok {
				return nil, nil
			}
			return gqlObject{typ: "Commit", v: sha}, nil
		}
	case "Commit":
		sha := obj.(string)
		if field == "oid" {
			return sha, nil
		}
		return sha[:7], nil
	case "PullRequest":
		return x.pull(obj.(*pullState), field, args)
	case "PageInfo":
		c := obj.(*conn)
		switch field {
		case "hasNextPage":
			return c.hasNext, nil
		case "hasPreviousPage":
			return c.hasPrev, nil
		case "startCursor":
			if len(c.cursors) == 0 {
				return nil, nil
			}
			return c.cursors[0], nil
		case "endCursor":
			if len(c.cursors) == 0 {
				return nil, nil
			}
			return c.cursors[len(c.cursors)-1], nil
		}
	case "PullRequestReviewThreadConnection", "PullRequestReviewCommentConnection":
		c := obj.(*conn)
		edgeType := strings.TrimSuffix(typeName, "Connection") + "Edge"
		switch field {
		case "nodes":
			out := make([]any, len(c.items))
			for i, it := range c.items {
				out[i] = it
			}
			return out, nil
		case "edges":
			out := make([]any, len(c.items))
			for i, it := range c.items {
				out[i] = gqlObject{typ: edgeType, v: [2]any{c.cursors[i], it}}
			}
			return out, nil
		case "pageInfo":
			return gqlObject{typ: "PageInfo", v: c}, nil
		case "totalCount":
			return c.total, nil
		}
	case "PullRequestReviewThreadEdge", "PullRequestReviewCommentEdge":
		e := obj.([2]any)
		if field == "cursor" {
			return e[0], nil
		}
		return e[1], nil
	case "PullRequestReviewThread":
		return x.thread(obj.(*threadState), field, args)
	case "PullRequestReviewComment":
		return x.comment(obj.(*commentState), field)
	case "PullRequestReview":
		return x.review(obj.(*reviewState), field)
	case "ResolveReviewThreadPayload", "UnresolveReviewThreadPayload",
		"MarkPullRequestReadyForReviewPayload", "ConvertPullRequestToDraftPayload":
		return obj.(map[string]any)[field], nil
	}
	x.s.problem("graphql: no resolver for %s.%s", typeName, field)
	return nil, &gqlError{Message: "Something went wrong while executing your query."}
}

func (x *executor) query(field string, args map[string]any) (any, *gqlError) {
	s := x.s
	switch field {
	case "viewer":
		return gqlObject{typ: "User", v: x.c.viewer}, nil
	case "rateLimit":
		return gqlObject{typ: "RateLimit", v: s.bucket(x.c.viewer, "graphql")}, nil
	case "repository":
		owner, _ := args["owner"].(string)
		name, _ := args["name"].(string)
		r := s.repos[strings.ToLower(owner+"/"+name)]
		if r == nil || !s.permission(x.c.viewer, r).atLeast(PermissionRead) {
			return nil, notFoundErr(fmt.Sprintf("Could not resolve to a Repository with the name '%s/%s'.", owner, name))
		}
		return gqlObject{typ: "Repository", v: r}, nil
	case "node":
		id, _ := args["id"].(string)
		if o, ok := x.node(id); ok {
			return o, nil
		}
		return nil, notFoundErr(fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id))
	}
	return nil, nil
}

// node resolves a global id the viewer may see.
func (x *executor) node(id string) (gqlObject, bool) {
	var r *repoState
	var o gqlObject
	switch v := x.s.nodes[id].(type) {
	case *account:
		return gqlObject{typ: v.typ, v: v}, true
	case *repoState:
		r, o = v, gqlObject{typ: "Repository", v: v}
	case *pullState:
		r, o = v.repo, gqlObject{typ: "PullRequest", v: v}
	case *threadState:
		if !x.threadVisible(v) {
			return o, false
		}
		r, o = v.pull.repo, gqlObject{typ: "PullRequestReviewThread", v: v}
	case *commentState:
		if v.review.state == statePending && v.author != x.c.viewer {
			return o, false
		}
		r, o = v.pull.repo, gqlObject{typ: "PullRequestReviewComment", v: v}
	case *reviewState:
		if v.state == statePending && v.author != x.c.viewer {
			return o, false
		}
		r, o = v.pull.repo, gqlObject{typ: "PullRequestReview", v: v}
	default:
		return o, false
	}
	if !x.s.permission(x.c.viewer, r).atLeast(PermissionRead) {
		return o, false
	}
	if p, isPull := o.v.(*pullState); isPull {
		if err := x.s.refresh(x.c.ctx, p); err != nil {
			x.s.problem("graphql node %s: %v", id, err)
		}
	}
	return o, true
}

func (x *executor) actor(a *account, field string) (any, *gqlError) {
	switch field {
	case "id":
		return a.nodeID, nil
	case "databaseId":
		return int(a.id), nil
	case "login":
		return a.login, nil
	case "name":
		return nil, nil
	case "url":
		return x.c.html(a.login), nil
	case "resourcePath":
		return "/" + a.login, nil
	case "avatarUrl":
		return x.s.url + "/avatars/u/" + itoa(a.id), nil
	}
	return nil, nil
}

func (x *executor) repository(r *repoState, field string, args map[string]any) (any, *gqlError) {
	switch field {
	case "id":
		return r.nodeID, nil
	case "databaseId":
		return int(r.id), nil
	case "name":
		return r.name, nil
	case "nameWithOwner":
		return r.fullName(), nil
	case "owner":
		return actorObject(r.owner), nil
	case "url":
		return x.c.html(r.fullName()), nil
	case "isPrivate":
		return r.private, nil
	case "visibility":
		if r.private {
			return "PRIVATE", nil
		}
		return "PUBLIC", nil
	case "viewerPermission":
		p := x.s.permission(x.c.viewer, r)
		if p == PermissionNone {
			return nil, nil
		}
		return strings.ToUpper(string(p)), nil
	case "defaultBranchRef":
		return gqlObject{typ: "Ref", v: r}, nil
	case "pullRequest":
		n, _ := args["number"].(int)
		for _, p := range r.pulls {
			if p.number == n {
				if err := x.s.refresh(x.c.ctx, p); err != nil {
					x.s.problem("graphql pullRequest: %v", err)
					return nil, &gqlError{Message: "Something went wrong while executing your query."}
				}
				return gqlObject{typ: "PullRequest", v: p}, nil
			}
		}
		return nil, notFoundErr(fmt.Sprintf("Could not resolve to a PullRequest with the number of %d.", n))
	}
	return nil, nil
}

// threadVisible: a thread opened in a pending review is its author's alone.
func (x *executor) threadVisible(t *threadState) bool {
	root := t.root()
	return root.review.state != statePending || root.author == x.c.viewer
}

func (x *executor) pull(p *pullState, field string, args map[string]any) (any, *gqlError) {
	switch field {
	case "id":
		return p.nodeID, nil
	case "databaseId":
		return int(p.id), nil
	case "fullDatabaseId":
		return itoa(p.id), nil
	case "number":
		return p.number, nil
	case "title":
		return p.title, nil
	case "body":
		return p.body, nil
	case "url":
		return x.c.html(p.repo.fullName() + "/pull/" + itoa(int64(p.number))), nil
	case "state":
		return strings.ToUpper(p.state), nil
	case "isDraft":
		return p.draft, nil
	case "closed":
		return p.state == "closed", nil
	case "merged":
		return false, nil
	case "author":
		return actorObject(p.author), nil
	case "headRefName":
		return p.headRef, nil
	case "headRefOid":
		return p.headSHA, nil
	case "baseRefName":
		return p.baseRef, nil
	case "baseRefOid":
		return p.baseSHA, nil
	case "createdAt":
		return ts(p.created), nil
	case "updatedAt":
		return ts(p.updated), nil
	case "repository":
		return gqlObject{typ: "Repository", v: p.repo}, nil
	case "reviewThreads":
		var all []gqlObject
		for _, t := range p.threads {
			if x.threadVisible(t) {
				all = append(all, gqlObject{typ: "PullRequestReviewThread", v: t})
			}
		}
		c, err := paginate("reviewThreads", all, args)
		if err != nil {
			return nil, err
		}
		return gqlObject{typ: "PullRequestReviewThreadConnection", v: c}, nil
	}
	return nil, nil
}

// canManageThreads: resolving needs write access or authorship of the pull
// request; an Actions token cannot ("Resource not accessible by
// integration").
func (x *executor) canManageThreads(p *pullState) bool {
	v := x.c.viewer
	if v == nil || v.actions {
		return false
	}
	return v == p.author || x.s.permission(v, p.repo).atLeast(PermissionWrite)
}

func (x *executor) canReply(p *pullState) bool {
	v := x.c.viewer
	perm := x.s.permission(v, p.repo)
	if v != nil && v.actions {
		return perm.atLeast(PermissionWrite)
	}
	return v != nil && perm.atLeast(PermissionRead)
}

func (x *executor) locate(cm *commentState) (current, *gqlError) {
	cur, err := x.s.locate(x.c, cm)
	if err != nil {
		x.s.problem("graphql: locate comment %d: %v", cm.id, err)
		return cur, &gqlError{Message: "Something went wrong while executing your query."}
	}
	return cur, nil
}

func (x *executor) thread(t *threadState, field string, args map[string]any) (any, *gqlError) {
	root := t.root()
	file := root.subjectType == "file"
	switch field {
	case "id":
		return t.nodeID, nil
	case "isResolved":
		return t.resolved, nil
	case "isCollapsed":
		return t.resolved, nil
	case "isOutdated", "line", "startLine":
		cur, err := x.locate(root)
		if err != nil {
			return nil, err
		}
		switch {
		case field == "isOutdated":
			return cur.outdated, nil
		case file || cur.outdated:
			return nil, nil
		case field == "line":
			return cur.line, nil
		case root.startLine != 0:
			return cur.startLine, nil
		}
		return nil, nil
	case "path":
		return root.path, nil
	case "originalLine":
		if file {
			return nil, nil
		}
		return root.line, nil
	case "originalStartLine":
		if root.startLine == 0 {
			return nil, nil
		}
		return root.startLine, nil
	case "diffSide":
		if file {
			return "RIGHT", nil
		}
		return root.side, nil
	case "startDiffSide":
		if root.startLine == 0 {
			return nil, nil
		}
		return root.startSide, nil
	case "subjectType":
		return strings.ToUpper(root.subjectType), nil
	case "resolvedBy":
		if t.resolvedBy == nil {
			return nil, nil
		}
		return gqlObject{typ: "User", v: t.resolvedBy}, nil
	case "viewerCanResolve":
		return !t.resolved && x.canManageThreads(t.pull), nil
	case "viewerCanUnresolve":
		return t.resolved && x.canManageThreads(t.pull), nil
	case "viewerCanReply":
		return x.canReply(t.pull), nil
	case "comments":
		var all []gqlObject
		for _, cm := range t.comments {
			if cm.review.state != statePending || cm.author == x.c.viewer {
				all = append(all, gqlObject{typ: "PullRequestReviewComment", v: cm})
			}
		}
		c, err := paginate("comments", all, args)
		if err != nil {
			return nil, err
		}
		return gqlObject{typ: "PullRequestReviewCommentConnection", v: c}, nil
	case "pullRequest":
		return gqlObject{typ: "PullRequest", v: t.pull}, nil
	case "repository":
		return gqlObject{typ: "Repository", v: t.pull.repo}, nil
	}
	return nil, nil
}

func (x *executor) comment(cm *commentState, field string) (any, *gqlError) {
	p := cm.pull
	switch field {
	case "id":
		return cm.nodeID, nil
	case "databaseId":
		return int(cm.id), nil
	case "fullDatabaseId":
		return itoa(cm.id), nil
	case "body":
		return cm.body, nil
	case "author":
		return actorObject(cm.author), nil
	case "path":
		return cm.path, nil
	case "line", "startLine", "outdated", "commit":
		cur, err := x.locate(cm)
		if err != nil {
			return nil, err
		}
		switch {
		case field == "outdated":
			return cur.outdated, nil
		case field == "commit":
			return gqlObject{typ: "Commit", v: cur.commitID}, nil
		case cur.outdated || cm.subjectType == "file":
			return nil, nil
		case field == "line":
			return cur.line, nil
		case cm.startLine != 0:
			return cur.startLine, nil
		}
		return nil, nil
	case "originalLine":
		if cm.subjectType == "file" {
			return nil, nil
		}
		return cm.line, nil
	case "originalStartLine":
		if cm.startLine == 0 {
			return nil, nil
		}
		return cm.startLine, nil
	case "diffHunk":
		return cm.diffHunk, nil
	case "url":
		return x.c.html(p.repo.fullName() + "/pull/" + itoa(int64(p.number)) + "#discussion_r" + itoa(cm.id)), nil
	case "createdAt":
		return ts(cm.created), nil
	case "updatedAt":
		return ts(cm.updated), nil
	case "replyTo":
		if cm.inReplyTo == nil {
			return nil, nil
		}
		return gqlObject{typ: "PullRequestReviewComment", v: cm.inReplyTo}, nil
	case "state":
		if cm.review.state == statePending {
			return "PENDING", nil
		}
		return "SUBMITTED", nil
	case "pullRequestReview":
		return gqlObject{typ: "PullRequestReview", v: cm.review}, nil
	case "pullRequest":
		return gqlObject{typ: "PullRequest", v: p}, nil
	case "originalCommit":
		return gqlObject{typ: "Commit", v: cm.commitID}, nil
	case "authorAssociation":
		return x.s.association(cm.author, p.repo), nil
	case "viewerDidAuthor":
		return cm.author == x.c.viewer, nil
	}
	return nil, nil
}

func (x *executor) review(r *reviewState, field string) (any, *gqlError) {
	switch field {
	case "id":
		return r.nodeID, nil
	case "databaseId":
		return int(r.id), nil
	case "fullDatabaseId":
		return itoa(r.id), nil
	case "state":
		return r.state, nil
	case "body":
		return r.body, nil
	case "author":
		return actorObject(r.author), nil
	case "submittedAt":
		if r.state == statePending {
			return nil, nil
		}
		return ts(r.submitted), nil
	case "url":
		return x.c.html(r.pull.repo.fullName() + "/pull/" + itoa(int64(r.pull.number)) + "#pullrequestreview-" + itoa(r.id)), nil
	case "commit":
		return gqlObject{typ: "Commit", v: r.commitID}, nil
	case "pullRequest":
		return gqlObject{typ: "PullRequest", v: r.pull}, nil
	}
	return nil, nil
}

// mutationDenied is GitHub's FORBIDDEN error for a mutation the viewer may
// not run. The integration sentence is GitHub's; the one for a person is
// assumed.
func (x *executor) mutationDenied(mutation string) *gqlError {
	if x.c.viewer.actions {
		return forbiddenErr("Resource not accessible by integration")
	}
	return forbiddenErr(fmt.Sprintf("%s does not have the correct permissions to execute `%s`", x.c.viewer.login, mutation))
}

func (x *executor) mutation(field string, args map[string]any) (any, *gqlError) {
	input, _ := args["input"].(map[string]any)
	payload := map[string]any{"clientMutationId": input["clientMutationId"]}
	now := x.s.now()
	switch field {
	case "resolveReviewThread", "unresolveReviewThread":
		id, _ := input["threadId"].(string)
		o, found := x.node(id)
		t, isThread := o.v.(*threadState)
		if !found || !isThread {
			return nil, notFoundErr(fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id))
		}
		if !x.canManageThreads(t.pull) {
			name := "ResolveReviewThread"
			if field == "unresolveReviewThread" {
				name = "UnresolveReviewThread"
			}
			return nil, x.mutationDenied(name)
		}
		if field == "resolveReviewThread" && !t.resolved {
			t.resolved, t.resolvedBy = true, x.c.viewer
		} else if field == "unresolveReviewThread" && t.resolved {
			t.resolved, t.resolvedBy = false, nil
		}
		payload["thread"] = gqlObject{typ: "PullRequestReviewThread", v: t}
		typ := "ResolveReviewThreadPayload"
		if field == "unresolveReviewThread" {
			typ = "UnresolveReviewThreadPayload"
		}
		return gqlObject{typ: typ, v: payload}, nil
	case "markPullRequestReadyForReview", "convertPullRequestToDraft":
		id, _ := input["pullRequestId"].(string)
		o, found := x.node(id)
		p, isPull := o.v.(*pullState)
		if !found || !isPull {
			return nil, notFoundErr(fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id))
		}
		perm := x.s.permission(x.c.viewer, p.repo)
		if !perm.atLeast(PermissionWrite) && (x.c.viewer != p.author || x.c.viewer.actions) {
			name := "MarkPullRequestReadyForReview"
			if field == "convertPullRequestToDraft" {
				name = "ConvertPullRequestToDraft"
			}
			return nil, x.mutationDenied(name)
		}
		if draft := field == "convertPullRequestToDraft"; p.draft != draft {
			p.draft, p.updated = draft, now
		}
		payload["pullRequest"] = gqlObject{typ: "PullRequest", v: p}
		typ := "MarkPullRequestReadyForReviewPayload"
		if field == "convertPullRequestToDraft" {
			typ = "ConvertPullRequestToDraftPayload"
		}
		return gqlObject{typ: typ, v: payload}, nil
	}
	return nil, nil
}
