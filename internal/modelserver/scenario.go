package modelserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// Scenario is what the server answers: scripts per API. The zero Scenario
// is valid; every main request to it fails with HTTP 400 (no script).
type Scenario struct {
	Anthropic []Script `json:"anthropic"`
	Gemini    []Script `json:"gemini"`
	// OpenAI scripts answer the OpenAI Responses API (what `codex exec`
	// calls).
	OpenAI []Script `json:"openai"`
}

// Script is the conversation of one agent process (or session). Match
// selects it: the first script of the request's API whose Match is a
// substring of some user text of the request wins; "" matches every request.
// Put scripts with specific matches before catch-all ones.
type Script struct {
	Match string `json:"match"`
	Turns []Turn `json:"turns"`
}

// Turn is one scripted model answer. A turn with Tools is done once every
// one of its tool call ids has a result in the request history; a text-only
// turn is done once its text appears in an assistant (model) message of the
// history. The server answers the turn after the last done turn, and a
// short closing text ("done.") once the script is exhausted.
//
// Text and tool inputs may contain {{workdir}}, replaced by the agent's
// working directory as read from the request.
type Turn struct {
	// Text is said before the tool calls (or alone).
	Text string `json:"text,omitempty"`
	// Tools are Anthropic tool_use blocks / Gemini functionCall parts /
	// OpenAI function_call or custom_tool_call items, in order.
	Tools []ToolCall `json:"tools,omitempty"`
	// Error makes the server answer with this HTTP error instead, Error.Times
	// times (0: always), then answer the turn normally.
	Error *HTTPError `json:"error,omitempty"`
	// Delay is waited before answering (a JSON string like "2s"). The wait
	// ends early, without an answer, when the client goes away or the server
	// closes.
	Delay Duration `json:"delay,omitempty"`
	// Hang makes the server never answer: the request blocks until the
	// client goes away or the server closes.
	Hang bool `json:"hang,omitempty"`
}

// ToolCall is one scripted tool call.
type ToolCall struct {
	// ID is required and unique within the scenario: turn selection looks
	// for results carrying it.
	ID string `json:"id"`
	// Name is the CLI's tool name: Write, Edit, Bash, Read... for claude;
	// write_file, read_file, run_shell_command... for gemini;
	// exec_command, apply_patch... for codex.
	Name string `json:"name"`
	// Input is the tool's input (claude) or args (gemini). It must satisfy
	// the tool's schema: claude's Write needs an absolute file_path, so use
	// "{{workdir}}/file".
	//
	// For OpenAI the request says which shape a tool takes: a tool it
	// declares as "custom" (codex's freeform apply_patch) is answered with a
	// custom_tool_call whose raw input is Input["input"], a string (the
	// patch); any other name with a function_call whose arguments are Input
	// as a JSON string ({"cmd": "..."} for exec_command).
	Input map[string]any `json:"input"`
}

// HTTPError is a scripted API failure.
type HTTPError struct {
	// Status is the HTTP status code, 400 to 599.
	Status int `json:"status"`
	// Message is the error message put in the API's error body.
	Message string `json:"message"`
	// Times is how many requests get the error before the turn is answered
	// normally; 0 means always. The count is kept per server and turn.
	Times int `json:"times"`
	// ResetsIn, on an OpenAI 429, makes the error a usage limit that resets
	// this long after the answer, as ChatGPT's Codex backend reports one:
	// error.type "usage_limit_reached" with resets_at (Unix seconds) and
	// resets_in_seconds in the body, and x-codex-primary-* rate-limit
	// headers saying the 5-hour window is used up. The other APIs, and
	// other statuses, ignore it. It must not be negative.
	ResetsIn Duration `json:"resets_in,omitempty"`
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string such as "1.5s".
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string ("250ms", "2s").
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"2s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// LoadScenario reads and validates a scenario from a JSON file. Unknown
// fields are an error, so a misspelt key does not silently do nothing.
func LoadScenario(path string) (Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("modelserver: read scenario: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var sc Scenario
	if err := dec.Decode(&sc); err != nil {
		return Scenario{}, fmt.Errorf("modelserver: scenario %s: %w", path, err)
	}
	if err := sc.Validate(); err != nil {
		return Scenario{}, fmt.Errorf("modelserver: scenario %s: %w", path, err)
	}
	return sc, nil
}

// Validate checks that every tool call has a name and an id unique within
// the scenario, that errors have a status in 400..599 and a non-negative
// Times, that delays are not negative and that no turn is empty. It returns
// every problem found, joined.
func (sc Scenario) Validate() error {
	var errs []error
	ids := map[string]string{}
	check := func(api string, scripts []Script) {
		for si, s := range scripts {
			for ti, t := range s.Turns {
				at := fmt.Sprintf("%s[%d].turns[%d]", api, si, ti)
				if t.Text == "" && len(t.Tools) == 0 && t.Error == nil && !t.Hang {
					errs = append(errs, fmt.Errorf("%s: empty turn (needs text, tools, error or hang)", at))
				}
				if t.Delay < 0 {
					errs = append(errs, fmt.Errorf("%s: negative delay", at))
				}
				if e := t.Error; e != nil {
					if e.Status < 400 || e.Status > 599 {
						errs = append(errs, fmt.Errorf("%s: error status %d not in 400..599", at, e.Status))
					}
					if e.Times < 0 {
						errs = append(errs, fmt.Errorf("%s: negative error times", at))
					}
					if e.ResetsIn < 0 {
						errs = append(errs, fmt.Errorf("%s: negative error resets_in", at))
					}
				}
				for ci, c := range t.Tools {
					cat := fmt.Sprintf("%s.tools[%d]", at, ci)
					if c.Name == "" {
						errs = append(errs, fmt.Errorf("%s: name is required", cat))
					}
					if c.ID == "" {
						errs = append(errs, fmt.Errorf("%s: id is required", cat))
						continue
					}
					if prev, dup := ids[c.ID]; dup {
						errs = append(errs, fmt.Errorf("%s: id %q already used at %s", cat, c.ID, prev))
						continue
					}
					ids[c.ID] = cat
				}
			}
		}
	}
	check("anthropic", sc.Anthropic)
	check("gemini", sc.Gemini)
	check("openai", sc.OpenAI)
	return errors.Join(errs...)
}
