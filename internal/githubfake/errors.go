package githubfake

import (
	"net/http"
	"strconv"
	"strings"
)

// Documentation URLs GitHub puts in error bodies that belong to no single
// operation.
const (
	docREST           = "https://docs.github.com/rest"
	docGraphQL        = "https://docs.github.com/graphql"
	docGraphQLAuth    = "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql"
	docPrimaryLimit   = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit"
	docSecondaryLimit = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	docAPIVersions    = "https://docs.github.com/rest/overview/api-versions"
)

// The REST API versions GitHub serves; any other X-GitHub-Api-Version is a
// 400.
const (
	supportedVersion  = "2022-11-28"
	supportedVersion2 = "2026-03-10"
)

// apiError is a REST failure: a status and the JSON body GitHub sends.
type apiError struct {
	status int
	body   any
	header http.Header
}

func (e *apiError) Error() string { return http.StatusText(e.status) }

// basicError is GitHub's basic-error envelope. Recent responses carry the
// status as a string.
func basicError(message, docURL string, status int) map[string]any {
	return map[string]any{
		"message":           message,
		"documentation_url": docURL,
		"status":            strconv.Itoa(status),
	}
}

func notFound(docURL string) *apiError {
	return &apiError{status: http.StatusNotFound, body: basicError("Not Found", docURL, http.StatusNotFound)}
}

func forbidden(message, docURL string) *apiError {
	return &apiError{status: http.StatusForbidden, body: basicError(message, docURL, http.StatusForbidden)}
}

// fieldError is one entry of a validation-error body.
type fieldError struct {
	Resource string `json:"resource,omitempty"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

// validationFailed is the 422 "Validation Failed" shape with error objects.
func validationFailed(docURL string, errs ...fieldError) *apiError {
	body := basicError("Validation Failed", docURL, http.StatusUnprocessableEntity)
	body["errors"] = errs
	return &apiError{status: http.StatusUnprocessableEntity, body: body}
}

// unprocessableSimple is the 422 shape whose errors are strings
// (validation-error-simple), used by the review endpoints. GitHub joins
// the sentences of one failed record into one string.
func unprocessableSimple(docURL string, sentences ...string) *apiError {
	body := basicError("Unprocessable Entity", docURL, http.StatusUnprocessableEntity)
	body["errors"] = []string{toSentence(sentences)}
	return &apiError{status: http.StatusUnprocessableEntity, body: body}
}

// unprocessableMessage is a 422 whose message says it all (JSON-schema
// failures: "Invalid request.\n\n...").
func unprocessableMessage(message, docURL string) *apiError {
	return &apiError{status: http.StatusUnprocessableEntity, body: basicError(message, docURL, http.StatusUnprocessableEntity)}
}

// toSentence joins as Rails' Array#to_sentence does: "a", "a and b",
// "a, b, and c".
func toSentence(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	case 2:
		return parts[0] + " and " + parts[1]
	default:
		return strings.Join(parts[:len(parts)-1], ", ") + ", and " + parts[len(parts)-1]
	}
}
