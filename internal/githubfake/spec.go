package githubfake

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// specJSON is GitHub's REST description for the operations the fake serves
// (a subset of api.github.com 2022-11-28; its provenance is in its
// x-subset key). Every request and every response of the fake is checked
// against it.
//
//go:embed testdata/github-openapi-subset.json
var specJSON []byte

// specServer is the server URL the router is built for. Requests are
// rewritten onto it before matching, so the fake's own port never matters.
const specServer = "https://api.github.com"

// spec is the loaded OpenAPI document and a router over it.
type spec struct {
	doc    *openapi3.T
	router routers.Router
	docURL map[string]string // operationId -> externalDocs URL
}

// loadSpec parses the embedded document once per process: it is 419 KB.
var loadSpec = sync.OnceValues(func() (*spec, error) {
	trimmed, err := withoutProse(specJSON)
	if err != nil {
		return nil, fmt.Errorf("githubfake: load OpenAPI subset: %w", err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(trimmed)
	if err != nil {
		return nil, fmt.Errorf("githubfake: load OpenAPI subset: %w", err)
	}
	// GitHub's own examples do not all match their schemas (a bad
	// date-time in the commit example), so examples are not validated.
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("githubfake: validate OpenAPI subset: %w", err)
	}
	doc.Servers = openapi3.Servers{{URL: specServer}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("githubfake: OpenAPI router: %w", err)
	}
	sp := &spec{doc: doc, router: router, docURL: map[string]string{}}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.ExternalDocs != nil {
				sp.docURL[op.OperationID] = op.ExternalDocs.URL
			}
		}
	}
	return sp, nil
})

// withoutProse drops the descriptions, summaries and examples of the
// description: three quarters of its bytes, and nothing validation reads
// (examples are not validated). Loading then takes a third of the time. A
// property that happens to be named "description" or "example" is kept:
// keys inside a "properties" map are property names.
func withoutProse(data []byte) ([]byte, error) {
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var strip func(v any, propertyNames bool)
	strip = func(v any, propertyNames bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if !propertyNames {
					if _, isText := val.(string); isText && (k == "description" || k == "summary") {
						x[k] = "" // a response must keep its description key
						continue
					}
					if k == "example" || k == "examples" {
						delete(x, k)
						continue
					}
				}
				strip(val, k == "properties" && !propertyNames)
			}
		case []any:
			for _, item := range x {
				strip(item, false)
			}
		}
	}
	strip(doc, false)
	return json.Marshal(doc)
}

// multiSegmentRef matches the two commit-status paths whose {ref} may
// contain slashes (x-multi-segment in the description).
var multiSegmentRef = regexp.MustCompile(`^(/repos/[^/]+/[^/]+/commits/)(.+)(/status|/statuses)$`)

// route finds the operation for method and the canonical path (no /api/v3
// prefix). It returns the route and its path parameters, decoded.
func (sp *spec) route(method, path, rawQuery string) (*routers.Route, map[string]string, error) {
	escaped := path
	if m := multiSegmentRef.FindStringSubmatch(path); m != nil {
		escaped = m[1] + strings.ReplaceAll(m[2], "/", "%2F") + m[3]
	}
	u := specServer + escaped
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		return nil, nil, err
	}
	rt, params, err := sp.router.FindRoute(req)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range params {
		if d, err := url.PathUnescape(v); err == nil {
			params[k] = d
		}
	}
	return rt, params, nil
}

// validationInput builds the kin-openapi input for one request.
func validationInput(rt *routers.Route, params map[string]string, method, path, rawQuery string, header http.Header, body []byte) (*openapi3filter.RequestValidationInput, error) {
	u := specServer + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = header.Clone()
	if len(body) > 0 && req.Header.Get("Content-Type") == "" {
		// GitHub reads a body as JSON whatever its declared type.
		req.Header.Set("Content-Type", "application/json")
	}
	if ct := req.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/") && strings.Contains(ct, "json") && !strings.HasPrefix(ct, "application/json") {
		req.Header.Set("Content-Type", "application/json")
	}
	return &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route:      rt,
		Options: &openapi3filter.Options{
			AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
			SkipSettingDefaults: true,
		},
	}, nil
}

// validateResponse checks one response of the fake against the route's
// documented responses. Statuses the description does not list are not
// checked (kin-openapi's default).
func validateResponse(in *openapi3filter.RequestValidationInput, status int, header http.Header, body []byte) error {
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: false},
	})
}

var missingProperty = regexp.MustCompile(`property "([^"]+)" is missing`)

// requestProblem turns a kin-openapi request validation error into the
// answer GitHub gives: 404 for a path parameter of the wrong type (GitHub
// matches no route), 400 for a body that is not a JSON object, and 422
// "Invalid request." with GitHub's JSON-schema sentences otherwise.
func requestProblem(err error, docURL string) *apiError {
	var reqErr *openapi3filter.RequestError
	if !errors.As(err, &reqErr) {
		return unprocessableMessage("Invalid request.\n\n"+err.Error(), docURL)
	}
	if reqErr.Parameter != nil && reqErr.Parameter.In == openapi3.ParameterInPath {
		return notFound(docURL)
	}
	var schemaErr *openapi3.SchemaError
	if reqErr.RequestBody != nil && !errors.As(err, &schemaErr) {
		if errors.Is(err, openapi3filter.ErrInvalidRequired) {
			return unprocessableMessage("Invalid request.\n\nNo body was supplied.", docURL)
		}
		return &apiError{status: http.StatusBadRequest, body: basicError("Problems parsing JSON", docURL, http.StatusBadRequest)}
	}
	if schemaErr == nil {
		return unprocessableMessage("Invalid request.\n\n"+reqErr.Error(), docURL)
	}
	ptr := schemaErr.JSONPointer()
	where := "properties/" + strings.Join(ptr, "/")
	if reqErr.Parameter != nil {
		where = reqErr.Parameter.Name
	}
	value, jerr := json.Marshal(schemaErr.Value)
	if jerr != nil {
		value = []byte(fmt.Sprint(schemaErr.Value))
	}
	var sentence string
	switch schemaErr.SchemaField {
	case "required":
		if m := missingProperty.FindStringSubmatch(schemaErr.Reason); m != nil {
			sentence = fmt.Sprintf("%q wasn't supplied.", m[1])
		} else {
			sentence = schemaErr.Reason + "."
		}
	case "enum":
		enum, eerr := json.Marshal(schemaErr.Schema.Enum)
		if eerr != nil {
			enum = []byte(fmt.Sprint(schemaErr.Schema.Enum))
		}
		sentence = fmt.Sprintf("For '%s', %s is not one of %s.", where, value, enumList(enum))
	case "type":
		types := schemaErr.Schema.Type.Slice()
		sort.Strings(types)
		sentence = fmt.Sprintf("For '%s', %s is not %s.", where, value, article(strings.Join(types, " or ")))
	default:
		sentence = fmt.Sprintf("For '%s', %s %s.", where, value, schemaErr.Reason)
	}
	if reqErr.Parameter != nil {
		return validationFailed(docURL, fieldError{Code: "invalid", Field: reqErr.Parameter.Name, Message: sentence})
	}
	return unprocessableMessage("Invalid request.\n\n"+sentence, docURL)
}

// enumList renders a JSON array as GitHub does: ["a", "b"].
func enumList(b []byte) string {
	return strings.ReplaceAll(string(b), `","`, `", "`)
}

func article(noun string) string {
	switch {
	case noun == "":
		return "valid"
	case strings.ContainsAny(noun[:1], "aeiou"):
		return "an " + noun
	default:
		return "a " + noun
	}
}
