package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// workdirVar is replaced by the agent's working directory in turn texts and
// tool inputs.
const workdirVar = "{{workdir}}"

// reply is a model answer to put on the wire.
type reply struct {
	text  string
	tools []ToolCall
}

// mainTurn does what is common to a main request of every API: the loop
// guard, script and turn selection, delay, hang and scripted errors. It
// returns the reply to send, or ok false when the request has already been
// answered with an error. A request whose delay or hang ends because the
// client went away or the server closed is abandoned (see abandon).
func (x *exchange) mainTurn(scripts []Script, c conversation) (rp reply, ok bool) {
	s := x.s
	x.rec.Main = true
	s.mu.Lock()
	s.mainReqs++
	n := s.mainReqs
	s.mu.Unlock()
	if limit := s.cfg.maxRequests; limit > 0 && n > limit {
		x.serverError(http.StatusBadRequest, fmt.Sprintf(
			"modelserver: loop guard: more than %d main requests (WithMaxRequests); the CLI is probably looping on one turn", limit))
		return reply{}, false
	}
	si := pickScript(scripts, c.userTexts)
	if si < 0 {
		x.serverError(http.StatusBadRequest, fmt.Sprintf(
			"modelserver: no %s script matches this request (user texts: %s)", x.rec.API, shortTexts(c.userTexts)))
		return reply{}, false
	}
	script := scripts[si]
	wd := c.workdir()
	ti := nextTurn(script, c, wd)
	x.rec.Script, x.rec.Turn = si, ti
	x.update()
	if ti >= len(script.Turns) {
		return reply{text: FinalText}, true
	}
	t := script.Turns[ti]
	if t.Delay > 0 && !x.wait(time.Duration(t.Delay)) {
		x.abandon()
	}
	if t.Hang {
		x.wait(-1)
		x.abandon()
	}
	if e := t.Error; e != nil {
		key := turnKey{api: x.rec.API, script: si, turn: ti}
		s.mu.Lock()
		send := e.Times == 0 || s.errsSent[key] < e.Times
		if send {
			s.errsSent[key]++
		}
		s.mu.Unlock()
		if send {
			x.scriptedError(e)
			return reply{}, false
		}
	}
	if wd == "" && turnUsesWorkdir(t) {
		x.logf("%s script %d turn %d uses %s but the request names no working directory", x.rec.API, si, ti, workdirVar)
	}
	rp = reply{text: substText(t.Text, wd)}
	for _, tc := range t.Tools {
		in := map[string]any{}
		// A JSON round trip turns whatever Go values a test put in Input
		// into JSON values, so that substValue sees every string.
		if b, err := json.Marshal(tc.Input); err == nil {
			_ = json.Unmarshal(b, &in)
		}
		in, _ = substValue(in, wd).(map[string]any)
		if in == nil {
			in = map[string]any{}
		}
		rp.tools = append(rp.tools, ToolCall{ID: tc.ID, Name: tc.Name, Input: in})
	}
	if rp.text == "" && len(rp.tools) == 0 {
		rp.text = FinalText // an error-only turn, once its errors are spent
	}
	return rp, true
}

// wait waits d (forever if d < 0). It returns false if the client went away
// or the server closed first.
func (x *exchange) wait(d time.Duration) bool {
	var fired <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		fired = t.C
	}
	select {
	case <-fired:
		return true
	case <-x.r.Context().Done():
		return false
	case <-x.s.closed:
		return false
	}
}

// abandon ends a request without any answer: the connection is dropped
// (net/http would otherwise send an empty 200 when the handler returns).
// The log entry keeps Status 0.
func (x *exchange) abandon() {
	x.logf("%s request abandoned: client gone or server closed", x.rec.API)
	panic(http.ErrAbortHandler)
}

// pickScript returns the index of the first script whose Match is "" or a
// substring of some user text, or -1.
func pickScript(scripts []Script, userTexts []string) int {
	for i, s := range scripts {
		if s.Match == "" {
			return i
		}
		for _, t := range userTexts {
			if strings.Contains(t, s.Match) {
				return i
			}
		}
	}
	return -1
}

// nextTurn returns the index of the turn after the last done turn of s
// (len(s.Turns) when the script is exhausted). Assistant messages are never
// counted: a tool turn is done when all its ids have results in the history,
// a text-only turn when its text appears in an assistant message.
func nextTurn(s Script, c conversation, wd string) int {
	results := make(map[string]bool, len(c.toolResults))
	for _, r := range c.toolResults {
		results[r.ID] = true
	}
	said := strings.Join(c.assistantTexts, "\n")
	for i := len(s.Turns) - 1; i >= 0; i-- {
		if turnDone(s.Turns[i], results, said, wd) {
			return i + 1
		}
	}
	return 0
}

func turnDone(t Turn, results map[string]bool, said, wd string) bool {
	if len(t.Tools) > 0 {
		for _, c := range t.Tools {
			if !results[c.ID] {
				return false
			}
		}
		return true
	}
	text := strings.TrimSpace(substText(t.Text, wd))
	return text != "" && strings.Contains(said, text)
}

func substText(s, wd string) string {
	if wd == "" {
		return s
	}
	return strings.ReplaceAll(s, workdirVar, wd)
}

// substValue returns a copy of v with {{workdir}} replaced in every string.
func substValue(v any, wd string) any {
	switch v := v.(type) {
	case string:
		return substText(v, wd)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = substValue(e, wd)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = substValue(e, wd)
		}
		return out
	}
	return v
}

func turnUsesWorkdir(t Turn) bool {
	if strings.Contains(t.Text, workdirVar) {
		return true
	}
	for _, c := range t.Tools {
		if valueUses(c.Input) {
			return true
		}
	}
	return false
}

func valueUses(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, workdirVar)
	case map[string]any:
		for _, e := range v {
			if valueUses(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if valueUses(e) {
				return true
			}
		}
	}
	return false
}

// shortTexts quotes texts for a log line, each cut to 80 bytes.
func shortTexts(texts []string) string {
	q := make([]string, len(texts))
	for i, t := range texts {
		if len(t) > 80 {
			t = t[:80] + "..."
		}
		q[i] = fmt.Sprintf("%q", t)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
