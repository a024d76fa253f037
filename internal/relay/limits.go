package relay

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// resetFromHeaders is when a 429's headers say the limit resets, the
// latest they name, or the zero time: the unified limit of Anthropic's
// subscriptions (anthropic-ratelimit-unified-reset, Unix seconds), ChatGPT's
// Codex plans (x-codex-primary-reset-at, Unix seconds), Anthropic's
// request and token limits (anthropic-ratelimit-*-reset, RFC 3339),
// OpenAI's (x-ratelimit-reset-*, a duration such as "6m0s"), and
// Retry-After (seconds, or an HTTP date).
func resetFromHeaders(h http.Header, now time.Time) time.Time {
	var at time.Time
	later := func(t time.Time) {
		if t.After(at) {
			at = t
		}
	}
	for _, k := range []string{"anthropic-ratelimit-unified-reset", "x-codex-primary-reset-at", "x-codex-secondary-reset-at"} {
		if n, err := strconv.ParseInt(h.Get(k), 10, 64); err == nil && n > 0 {
			later(time.Unix(n, 0))
		}
	}
	for k, vs := range h {
		lk := strings.ToLower(k)
		switch {
		case strings.HasPrefix(lk, "anthropic-ratelimit-") && strings.HasSuffix(lk, "-reset") && !strings.Contains(lk, "unified"):
			if t, err := time.Parse(time.RFC3339, vs[0]); err == nil {
				later(t)
			}
		case strings.HasPrefix(lk, "x-ratelimit-reset-"):
			if d, err := time.ParseDuration(vs[0]); err == nil {
				later(now.Add(d))
			}
		}
	}
	if ra := h.Get("Retry-After"); ra != "" {
		if n, err := strconv.Atoi(ra); err == nil && n > 0 {
			later(now.Add(time.Duration(n) * time.Second))
		} else if t, err := http.ParseTime(ra); err == nil {
			later(t)
		}
	}
	return at
}

// resetFromBody is when a 429's JSON body says the limit resets, and the
// body's message: Gemini's google.rpc.RetryInfo (retryDelay "3599s"), and
// OpenAI's resets_at (Unix seconds) or resets_in_seconds.
func resetFromBody(body []byte, now time.Time) (time.Time, string) {
	var doc struct {
		Error struct {
			Message         string `json:"message"`
			ResetsAt        int64  `json:"resets_at"`
			ResetsInSeconds int64  `json:"resets_in_seconds"`
			Details         []struct {
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return time.Time{}, ""
	}
	e := doc.Error
	switch {
	case e.ResetsAt > 0:
		return time.Unix(e.ResetsAt, 0), e.Message
	case e.ResetsInSeconds > 0:
		return now.Add(time.Duration(e.ResetsInSeconds) * time.Second), e.Message
	}
	for _, d := range e.Details {
		if delay, err := time.ParseDuration(d.RetryDelay); err == nil && delay > 0 {
			return now.Add(delay), e.Message
		}
	}
	return time.Time{}, e.Message
}
