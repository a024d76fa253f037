package observability

import (
	"encoding/json"
	"slices"
	"strings"
)

// Redacted replaces every secret value spawn writes anywhere.
const Redacted = "[REDACTED]"

// minSecretLen keeps short values (a test key "test", a flag "1") from
// turning ordinary words into [REDACTED] everywhere.
const minSecretLen = 8

// Redactor replaces secret values in text. The zero value redacts nothing.
type Redactor struct {
	replacer *strings.Replacer
}

// IsSecretName reports whether an environment variable holds a secret by
// spawn's rule: its name contains KEY, TOKEN, SECRET or PASSWORD.
func IsSecretName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// NewRedactor returns a Redactor for the secret values of env (KEY=VALUE
// pairs). Each value is also matched in its JSON-escaped form, so a secret
// holding quotes or backslashes is caught inside a JSON document too.
func NewRedactor(env []string) *Redactor {
	var secrets []string
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || len(value) < minSecretLen || !IsSecretName(name) {
			continue
		}
		secrets = append(secrets, value)
		if b, err := json.Marshal(value); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != value {
				secrets = append(secrets, esc)
			}
		}
	}
	if len(secrets) == 0 {
		return &Redactor{}
	}
	// Longest first, so a secret that contains another is replaced whole.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	secrets = slices.Compact(secrets)
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, Redacted)
	}
	return &Redactor{replacer: strings.NewReplacer(pairs...)}
}

// String returns s with every secret value replaced by [REDACTED].
func (r *Redactor) String(s string) string {
	if r == nil || r.replacer == nil {
		return s
	}
	return r.replacer.Replace(s)
}

// Bytes is String for a byte slice.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || r.replacer == nil {
		return b
	}
	return []byte(r.replacer.Replace(string(b)))
}
