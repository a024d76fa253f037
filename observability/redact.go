package observability

import (
	"bytes"
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
	// secrets are the strings replacer replaces, every JSON form included.
	// Text that contains none of them has nothing to redact: it is returned
	// as it is, without the replacer's pass and copy.
	secrets    []string
	secretsRaw [][]byte // secrets as bytes, for Bytes
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

// SecretValues are the values of env's (KEY=VALUE pairs) variables whose
// name IsSecretName, every setting of each, in env's order.
func SecretValues(env []string) []string {
	var out []string
	for _, kv := range env {
		if name, value, ok := strings.Cut(kv, "="); ok && IsSecretName(name) {
			out = append(out, value)
		}
	}
	return out
}

// NewRedactor is RedactorOf the SecretValues of env.
func NewRedactor(env []string) *Redactor { return RedactorOf(SecretValues(env)...) }

// RedactorOf returns a Redactor for the values among values that are at
// least 8 bytes long. Each value is also matched in the forms a JSON
// encoder gives it inside a string, so a secret holding quotes,
// backslashes, control characters or <, > and & is caught inside a JSON
// document too: Go's (which escapes <, > and & as \u003c...) and the agent
// CLIs' JavaScript one (which escapes neither those nor U+2028 and U+2029).
func RedactorOf(values ...string) *Redactor {
	var secrets []string
	for _, value := range values {
		if len(value) < minSecretLen {
			continue
		}
		secrets = append(secrets, value)
		secrets = append(secrets, jsonForms(value)...)
	}
	if len(secrets) == 0 {
		return &Redactor{}
	}
	// Longest first, so a secret that contains another is replaced whole;
	// equal strings end up side by side for Compact.
	slices.SortFunc(secrets, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	secrets = slices.Compact(secrets)
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, Redacted)
	}
	raw := make([][]byte, len(secrets))
	for i, s := range secrets {
		raw[i] = []byte(s)
	}
	return &Redactor{replacer: strings.NewReplacer(pairs...), secrets: secrets, secretsRaw: raw}
}

// String returns s with every secret value replaced by [REDACTED]. Matches
// are taken from left to right without overlapping, the longest at a
// place first, so no secret is left whole in the text copied from s; where
// two different secrets overlap, the part of the later one past the
// earlier one's end is kept. Callers that redact a stream piece by piece
// must cut it where no secret spans the cut (a secret holding a line
// break is missed by line-by-line redaction).
func (r *Redactor) String(s string) string {
	if r == nil || r.replacer == nil {
		return s
	}
	for _, secret := range r.secrets {
		if strings.Contains(s, secret) {
			return r.replacer.Replace(s)
		}
	}
	return s
}

// Bytes is String for a byte slice. When b holds no secret, the result is b
// itself, not a copy.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || r.replacer == nil {
		return b
	}
	for _, secret := range r.secretsRaw {
		if bytes.Contains(b, secret) {
			return []byte(r.replacer.Replace(string(b)))
		}
	}
	return b
}

// jsonForms returns the ways value can appear inside a JSON string that
// differ from value itself: encoded by Go with and without HTML escaping,
// and as JavaScript's JSON.stringify writes it (no HTML escaping, U+2028
// and U+2029 left as they are).
func jsonForms(value string) []string {
	var forms []string
	add := func(f string) {
		if f != value && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	if b, err := json.Marshal(value); err == nil {
		add(string(b[1 : len(b)-1]))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err == nil {
		plain := strings.TrimSuffix(buf.String(), "\n")
		plain = plain[1 : len(plain)-1]
		add(plain)
		add(strings.NewReplacer(`\u2028`, "\u2028", `\u2029`, "\u2029").Replace(plain))
	}
	return forms
}
