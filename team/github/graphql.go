package github

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// graphQLErrors are the errors of a GraphQL answer.
type graphQLErrors []graphQLError

type graphQLError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Path    []any  `json:"path"`
}

func (es graphQLErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Message
		if e.Type != "" {
			msgs[i] = e.Type + ": " + e.Message
		}
	}
	return strings.Join(msgs, "; ")
}

// hasType reports whether one of the errors is of type typ.
func (es graphQLErrors) hasType(typ string) bool {
	for _, e := range es {
		if e.Type == typ {
			return true
		}
	}
	return false
}

// graphQL runs one GraphQL operation and decodes its data into out. A
// mutation is a write (serialised and spaced); both kinds are repeated
// after a 5xx, which is safe for the idempotent mutations spawn runs
// (resolve, ready for review). An HTTP error or errors in the answer are
// an *APIError whose Err is the graphQLErrors.
func (c *Client) graphQL(ctx context.Context, what string, mutation bool, query string, vars map[string]any, out any) error {
	payload, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return fmt.Errorf("%s: encode GraphQL request: %w", what, err)
	}
	cctx := withClass(ctx, callClass{write: mutation, idempotent: true})
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, c.loc.GraphQLURL, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("%s: %w", what, c.redactErr(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "spawn")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
		return c.apiError(what, unwrapURLError(err))
	}
	var body struct {
		Data   json.RawMessage `json:"data"`
		Errors graphQLErrors   `json:"errors"`
		// A REST-style error body (401, 403).
		Message string `json:"message"`
	}
	dec := json.NewDecoder(resp.Body)
	derr := dec.Decode(&body)
	if cerr := resp.Body.Close(); derr == nil {
		derr = cerr
	}
	if resp.StatusCode != http.StatusOK {
		msg := body.Message
		if msg == "" && len(body.Errors) > 0 {
			msg = body.Errors.Error()
		}
		return &APIError{Op: what, Status: resp.StatusCode, Message: c.redact(msg)}
	}
	if derr != nil {
		return &APIError{Op: what, Status: resp.StatusCode, Message: "the GraphQL answer is not JSON", Err: derr}
	}
	if len(body.Errors) > 0 {
		return &APIError{Op: what, Message: c.redact(body.Errors.Error()), Err: body.Errors}
	}
	if out != nil {
		if err := json.Unmarshal(body.Data, out); err != nil {
			return &APIError{Op: what, Message: "unexpected GraphQL answer", Err: err}
		}
	}
	return nil
}
