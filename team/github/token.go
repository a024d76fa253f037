package github

import "strings"

// Token is a GitHub credential. It prints (%v, %s, %q, %#v), marshals
// (JSON, text) and logs as "[redacted]"; Reveal returns its text, for the
// Authorization header only.
type Token string

const redacted = "[redacted]"

// String returns "[redacted]", or "" for an empty token.
func (t Token) String() string {
	if t == "" {
		return ""
	}
	return redacted
}

// GoString returns the same as String, so %#v hides the token too.
func (t Token) GoString() string { return `"` + t.String() + `"` }

// MarshalText hides the token from encoding/json and friends.
func (t Token) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// Reveal returns the token's text.
func (t Token) Reveal() string { return string(t) }

// redactTokens replaces every non-empty token's text in s.
func redactTokens(s string, tokens ...Token) string {
	for _, t := range tokens {
		if len(t) >= 4 {
			s = strings.ReplaceAll(s, string(t), redacted)
		}
	}
	return s
}
