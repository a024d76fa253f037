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
	doc, err := parseGraphQL(query)
	if err != nil {
		se := err.(*gqlSyntaxError)
		return ok(gqlErrors(&gqlError{Message: se.msg, Locations: []gqlLoc{se.loc}}))
	}
	op, gerr := doc.operation(req.OperationName)
	if gerr != nil {
		return ok(gqlErrors(gerr))
	}
	if op.kind == "subscription" {
		return ok(gqlErrors(&gqlError{Message: "Subscriptions are not supported", Locations: []gqlLoc{op.loc}}))
	}
	v := &validator{doc: doc, op: op, used: map[string]bool{}, vars: map[string]*gqlVarDef{}, inFrag: map[string]bool{}}
	if errs := v.run(); len(errs) > 0 {
		return ok(gqlErrors(errs...))
	}
	x := &executor{s: s, c: c, doc: doc}
	vars, errs := coerceVariables(op, req.Variables)
	if len(errs) > 0 {
		return ok(gqlErrors(errs...))
	}
	x.vars = vars
	root := "Query"
	if op.kind == "mutation" {
		root = "Mutation"
	}
	out := map[string]any{"data": nil}
	// A non-null root field that came out null makes data itself null.
	if data, complete := x.selection(root, nil, op.sel, nil); complete {
		out["data"] = data
	}
	if len(x.errs) > 0 {
		out["errors"] = x.errs
	}
	return ok(out)
}

// validator checks an operation against the schema before anything runs,
// as GitHub does: a query with an unknown field or a bad argument runs not
// at all.
type validator struct {
	doc    *gqlDoc
	op     *gqlOp
	errs   []*gqlError
	used   map[string]bool
	vars   map[string]*gqlVarDef
	inFrag map[string]bool
}

func (v *validator) opName() string {
	if v.op.name == "" {
		return "anonymous " + v.op.kind
	}
	return v.op.name
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
	for _, vd := range v.op.vars {
		if _, dup := v.vars[vd.name]; dup {
			v.fail(vd.loc, nil, "variableNotUnique", fmt.Sprintf("There can only be one variable named \"%s\"", vd.name), nil)
		}
		v.vars[vd.name] = vd
		n := vd.typ.named()
		if _, input := gqlInputs[n]; !isLeafType(n) && !input {
			v.fail(vd.loc, nil, "variableRequiresValidType", fmt.Sprintf("%s isn't a valid input type (on $%s)", n, vd.name), nil)
		}
	}
	root := "Query"
	if v.op.kind == "mutation" {
		root = "Mutation"
	}
	head := v.op.kind
	if v.op.name != "" {
		head += " " + v.op.name
	}
	v.selections(root, v.op.sel, []any{head})
	for _, vd := range v.op.vars {
		if !v.used[vd.name] {
			v.fail(vd.loc, []any{head}, "variableNotUsed", fmt.Sprintf("Variable $%s is declared by %s but not used", vd.name, v.opName()), map[string]any{"variableName": vd.name})
		}
	}
	return v.errs
}

func (v *validator) selections(typeName string, sels []*gqlSel, path []any) {
	for _, s := range sels {
		v.directives(s.dirs, path)
		switch s.kind {
		case selField:
			v.field(typeName, s, path)
		case selInline:
			cond := typeName
			if s.typeCond != "" {
				cond = s.typeCond
			}
			if !v.fragmentType(cond, typeName, s.loc, path, "") {
				continue
			}
			v.selections(cond, s.sel, append(path, "... on "+cond))
		case selSpread:
			fr := v.doc.frags[s.name]
			if fr == nil {
				v.fail(s.loc, path, "undefinedFragment", fmt.Sprintf("Fragment %s was used, but not defined", s.name), map[string]any{"fragmentName": s.name})
				continue
			}
			if v.inFrag[s.name] {
				v.fail(s.loc, path, "infiniteLoop", fmt.Sprintf("Fragment %s contains an infinite loop", s.name), nil)
				continue
			}
			if !v.fragmentType(fr.typeCond, typeName, s.loc, path, s.name) {
				continue
			}
			v.inFrag[s.name] = true
			v.selections(fr.typeCond, fr.sel, append(path, "... "+s.name))
			delete(v.inFrag, s.name)
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

func (v *validator) directives(dirs []*gqlDirective, path []any) {
	for _, d := range dirs {
		if d.name != "include" && d.name != "skip" {
			v.fail(d.loc, path, "undefinedDirective", fmt.Sprintf("Directive @%s is not defined", d.name), nil)
			continue
		}
		if len(d.args) != 1 || d.args[0].name != "if" {
			v.fail(d.loc, path, "missingRequiredArguments", fmt.Sprintf("Directive '%s' is missing required arguments: if", d.name), nil)
			continue
		}
		v.value(d.args[0].value, parseTypeRef("Boolean!"), d.args[0].loc, path, "Directive '"+d.name+"'", "if")
	}
}

func (v *validator) field(typeName string, s *gqlSel, path []any) {
	fpath := append(append([]any(nil), path...), s.key())
	if s.name == "__typename" {
		if len(s.sel) > 0 {
			v.fail(s.loc, fpath, "selectionMismatch", fmt.Sprintf("Selections can't be made on scalars (field '__typename' returns String! but has selections [%s])", selNames(s.sel)), nil)
		}
		return
	}
	def, ok := gqlTypes[typeName][s.name]
	if !ok {
		v.fail(s.loc, fpath, "undefinedField", fmt.Sprintf("Field '%s' doesn't exist on type '%s'", s.name, typeName),
			map[string]any{"typeName": typeName, "fieldName": s.name})
		return
	}
	given := map[string]bool{}
	for _, a := range s.args {
		given[a.name] = true
		at, ok := def.args[a.name]
		if !ok {
			v.fail(a.loc, append(fpath, a.name), "argumentNotAccepted", fmt.Sprintf("Field '%s' doesn't accept argument '%s'", s.name, a.name),
				map[string]any{"name": s.name, "typeName": "Field", "argumentName": a.name})
			continue
		}
		v.value(a.value, parseTypeRef(at), a.loc, fpath, "Field '"+s.name+"'", a.name)
	}
	var missing []string
	for name, at := range def.args {
		if strings.HasSuffix(at, "!") && !given[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		v.fail(s.loc, fpath, "missingRequiredArguments", fmt.Sprintf("Field '%s' is missing required arguments: %s", s.name, strings.Join(missing, ", ")),
			map[string]any{"className": "Field", "name": s.name, "arguments": strings.Join(missing, ", ")})
	}
	named := parseTypeRef(def.typ).named()
	switch {
	case isLeafType(named) && len(s.sel) > 0:
		v.fail(s.loc, fpath, "selectionMismatch", fmt.Sprintf("Selections can't be made on scalars (field '%s' returns %s but has selections [%s])", s.name, def.typ, selNames(s.sel)), nil)
	case !isLeafType(named) && len(s.sel) == 0:
		v.fail(s.loc, fpath, "selectionMismatch", fmt.Sprintf("Field must have selections (field '%s' returns %s but has no selections. Did you mean '%s { ... }'?)", s.name, def.typ, s.name), nil)
	case !isLeafType(named):
		v.selections(named, s.sel, fpath)
	}
}

func selNames(sels []*gqlSel) string {
	var names []string
	for _, s := range sels {
		names = append(names, s.key())
	}
	return strings.Join(names, ", ")
}

// value checks a literal (or a variable, also inside lists and input
// objects) against the argument's type.
func (v *validator) value(val *gqlValue, t *gqlType, loc gqlLoc, path []any, owner, arg string) {
	invalid := func() {
		v.fail(loc, path, "argumentLiteralsIncompatible", fmt.Sprintf("Argument '%s' on %s has an invalid value (%s). Expected type '%s'.", arg, owner, printValue(val), t),
			map[string]any{"typeName": "CoercionError"})
	}
	switch {
	case val.kind == valVar:
		v.used[val.raw] = true
		vd := v.vars[val.raw]
		if vd == nil {
			v.fail(loc, path, "variableNotDefined", fmt.Sprintf("Variable $%s is used by %s but not declared", val.raw, v.opName()), map[string]any{"variableName": val.raw})
			return
		}
		if !typeCompatible(vd.typ, t, vd.def != nil) {
			what := "Type mismatch"
			if vd.typ.named() == t.named() {
				what = "Nullability mismatch"
			}
			v.fail(loc, path, "variableMismatch", fmt.Sprintf("%s on variable $%s and argument %s (%s / %s)", what, val.raw, arg, vd.typ, t),
				map[string]any{"variableName": val.raw, "typeName": vd.typ.String(), "argumentName": arg, "errorMessage": what})
		}
	case val.kind == valNull:
		if t.nonNull {
			invalid()
		}
	case t.elem != nil:
		if val.kind != valList {
			v.value(val, t.elem, loc, path, owner, arg)
			return
		}
		for _, item := range val.list {
			v.value(item, t.elem, loc, path, owner, arg)
		}
	case gqlInputs[t.name] != nil:
		fields := gqlInputs[t.name]
		if val.kind != valObject {
			invalid()
			return
		}
		seen := map[string]bool{}
		for _, fv := range val.fields {
			ft, known := fields[fv.name]
			if !known {
				invalid()
				return
			}
			seen[fv.name] = true
			v.value(fv.value, parseTypeRef(ft), fv.loc, path, owner, arg)
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
func typeCompatible(have, want *gqlType, hasDefault bool) bool {
	if want.nonNull && !have.nonNull && !hasDefault {
		return false
	}
	if (have.elem == nil) != (want.elem == nil) {
		return false
	}
	if have.elem != nil {
		return typeCompatible(have.elem, want.elem, false)
	}
	return have.name == want.name
}

func literalFits(val *gqlValue, t *gqlType) bool {
	if val.kind == valVar {
		return true // checked by the variable rules
	}
	if val.kind == valNull {
		return !t.nonNull
	}
	if t.elem != nil {
		if val.kind != valList {
			return literalFits(val, t.elem)
		}
		for _, item := range val.list {
			if !literalFits(item, t.elem) {
				return false
			}
		}
		return true
	}
	switch name := t.name; {
	case name == "Int":
		if val.kind != valInt {
			return false
		}
		n, err := strconv.ParseInt(val.raw, 10, 64)
		return err == nil && n >= math.MinInt32 && n <= math.MaxInt32
	case name == "Float":
		return val.kind == valInt || val.kind == valFloat
	case name == "Boolean":
		return val.kind == valBool
	case name == "ID":
		return val.kind == valString || val.kind == valInt
	case gqlScalars[name]:
		return val.kind == valString
	case gqlEnums[name] != nil:
		return val.kind == valEnum && contains(gqlEnums[name], val.raw)
	case gqlInputs[name] != nil:
		if val.kind != valObject {
			return false
		}
		fields := gqlInputs[name]
		seen := map[string]bool{}
		for _, fv := range val.fields {
			ft, ok := fields[fv.name]
			if !ok || !literalFits(fv.value, parseTypeRef(ft)) {
				return false
			}
			seen[fv.name] = true
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

// printValue renders a literal as GraphQL source.
func printValue(val *gqlValue) string {
	switch val.kind {
	case valVar:
		return "$" + val.raw
	case valString:
		return strconv.Quote(val.raw)
	case valBool:
		return strconv.FormatBool(val.bool)
	case valNull:
		return "null"
	case valList:
		var parts []string
		for _, item := range val.list {
			parts = append(parts, printValue(item))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case valObject:
		var parts []string
		for _, fv := range val.fields {
			parts = append(parts, fv.name+": "+printValue(fv.value))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		return val.raw
	}
}

// coerceVariables checks the request's variables against the operation's
// declarations and applies defaults.
func coerceVariables(op *gqlOp, given map[string]any) (map[string]any, []*gqlError) {
	out := map[string]any{}
	var errs []*gqlError
	for _, vd := range op.vars {
		raw, present := given[vd.name]
		if !present && vd.def != nil {
			out[vd.name] = literalValue(vd.def, nil)
			continue
		}
		val, problem := coerceInput(raw, vd.typ)
		if problem != "" {
			errs = append(errs, &gqlError{
				Message:    fmt.Sprintf("Variable $%s of type %s was provided invalid value", vd.name, vd.typ),
				Locations:  []gqlLoc{vd.loc},
				Extensions: map[string]any{"value": raw, "problems": []any{map[string]any{"path": []any{}, "explanation": problem}}},
			})
			continue
		}
		out[vd.name] = val
	}
	return out, errs
}

// coerceInput converts a JSON value to type t; it returns an explanation
// when the value does not fit.
func coerceInput(raw any, t *gqlType) (any, string) {
	if raw == nil {
		if t.nonNull {
			return nil, "Expected value to not be null"
		}
		return nil, ""
	}
	if t.elem != nil {
		list, isList := raw.([]any)
		if !isList {
			list = []any{raw}
		}
		out := make([]any, len(list))
		for i, item := range list {
			v, p := coerceInput(item, t.elem)
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
	bad := fmt.Sprintf("Could not coerce value %s to %s", js, t.name)
	switch name := t.name; {
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
			v, p := coerceInput(fv, parseTypeRef(ft))
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
func literalValue(val *gqlValue, vars map[string]any) any {
	switch val.kind {
	case valVar:
		return vars[val.raw]
	case valInt:
		n, err := strconv.Atoi(val.raw)
		if err != nil {
			return val.raw
		}
		return n
	case valFloat:
		fl, err := strconv.ParseFloat(val.raw, 64)
		if err != nil {
			return val.raw
		}
		return fl
	case valString, valEnum:
		return val.raw
	case valBool:
		return val.bool
	case valList:
		out := make([]any, len(val.list))
		for i, item := range val.list {
			out[i] = literalValue(item, vars)
		}
		return out
	case valObject:
		out := map[string]any{}
		for _, fv := range val.fields {
			out[fv.name] = literalValue(fv.value, vars)
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
	doc  *gqlDoc
	vars map[string]any
	errs []*gqlError
}

// fieldGroup is every selection of one response key, merged.
type fieldGroup struct {
	key    string
	fields []*gqlSel
}

func (x *executor) skipped(dirs []*gqlDirective) bool {
	for _, d := range dirs {
		cond, _ := literalValue(d.args[0].value, x.vars).(bool)
		if (d.name == "skip" && cond) || (d.name == "include" && !cond) {
			return true
		}
	}
	return false
}

func (x *executor) collect(typeName string, sels []*gqlSel, groups []*fieldGroup, index map[string]*fieldGroup) []*fieldGroup {
	for _, s := range sels {
		if x.skipped(s.dirs) {
			continue
		}
		switch s.kind {
		case selField:
			g := index[s.key()]
			if g == nil {
				g = &fieldGroup{key: s.key()}
				index[s.key()] = g
				groups = append(groups, g)
			}
			g.fields = append(g.fields, s)
		case selInline:
			if s.typeCond == "" || possibleTypes(s.typeCond)[typeName] {
				groups = x.collect(typeName, s.sel, groups, index)
			}
		case selSpread:
			if fr := x.doc.frags[s.name]; fr != nil && possibleTypes(fr.typeCond)[typeName] {
				groups = x.collect(typeName, fr.sel, groups, index)
			}
		}
	}
	return groups
}

// selection executes sels on an object of the concrete type typeName. It
// returns false when a non-null field came out null: the object is then
// null itself.
func (x *executor) selection(typeName string, obj any, sels []*gqlSel, path []any) (*orderedMap, bool) {
	out := &orderedMap{vals: map[string]any{}}
	for _, g := range x.collect(typeName, sels, nil, map[string]*fieldGroup{}) {
		first := g.fields[0]
		fpath := append(append([]any(nil), path...), g.key)
		if first.name == "__typename" {
			out.set(g.key, typeName)
			continue
		}
		def := gqlTypes[typeName][first.name]
		args := map[string]any{}
		for _, a := range first.args {
			args[a.name] = literalValue(a.value, x.vars)
		}
		val, rerr := x.resolve(typeName, obj, first.name, args)
		if rerr != nil {
			rerr.Path = fpath
			rerr.Locations = []gqlLoc{first.loc}
			x.errs = append(x.errs, rerr)
			val = nil
		}
		var sub []*gqlSel
		for _, fs := range g.fields {
			sub = append(sub, fs.sel...)
		}
		v, good := x.complete(val, parseTypeRef(def.typ), sub, fpath)
		if !good {
			return nil, false
		}
		out.set(g.key, v)
	}
	return out, true
}

// complete shapes a resolved value by its type: lists, objects, leaves,
// and null checks for non-null types.
func (x *executor) complete(val any, t *gqlType, sels []*gqlSel, path []any) (any, bool) {
	if val == nil {
		if t.nonNull {
			return nil, false
		}
		return nil, true
	}
	if t.elem != nil {
		items, _ := val.([]any)
		out := make([]any, 0, len(items))
		for i, item := range items {
			v, good := x.complete(item, t.elem, sels, append(append([]any(nil), path...), i))
			if !good {
				if t.nonNull {
					return nil, false
				}
				return nil, true
			}
			out = append(out, v)
		}
		return out, true
	}
	if isLeafType(t.name) {
		return val, true
	}
	o := val.(gqlObject)
	m, good := x.selection(o.typ, o.v, sels, path)
	if !good {
		if t.nonNull {
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
