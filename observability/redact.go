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
	secrets []string
	find    *secretFinder
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
	return &Redactor{replacer: strings.NewReplacer(pairs...), secrets: secrets, find: newSecretFinder(secrets)}
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
	if holdsSecret(r.find, s) {
		return r.replacer.Replace(s)
	}
	return s
}

// Bytes is String for a byte slice. When b holds no secret, the result is b
// itself, not a copy.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || r.replacer == nil {
		return b
	}
	if holdsSecret(r.find, b) {
		return []byte(r.replacer.Replace(string(b)))
	}
	return b
}

// secretFinder tells whether a text holds one of a Redactor's secrets, in
// one pass over it however many secrets there are: every byte an agent
// writes is asked (its transcripts, events.ndjson), and a search per
// secret cost more than reading the agent's stream. It looks at the text
// through a window as long as the shortest secret (m bytes), by the
// window's last two bytes: when no secret's first m bytes hold them, no
// secret starts in the window, and the window moves as far as it can
// without passing a place where one may (Horspool's search on the pairs
// of bytes of the secrets' starts, as Wu and Manber have it for many
// patterns). Where a secret's start ends with them, the secrets are
// compared there.
type secretFinder struct {
	secrets []string
	m       int // the length of the window: the shortest secret's, at most maxWindow
	// shift is, for each pair of bytes (the first times 256 plus the
	// second), how far the window may move when its last two bytes are
	// that pair: m-1 for a pair no secret's start holds, else m-2-j for
	// the pair's last place j in a secret's start; 0 at a start's end.
	shift [1 << 16]uint8
}

// maxWindow bounds a secretFinder's window: its shifts are bytes.
const maxWindow = 255

func newSecretFinder(secrets []string) *secretFinder {
	f := &secretFinder{secrets: secrets, m: maxWindow}
	for _, s := range secrets {
		f.m = min(f.m, len(s))
	}
	for i := range f.shift {
		f.shift[i] = uint8(f.m - 1)
	}
	for _, s := range secrets {
		for j := 0; j+1 < f.m; j++ {
			pair := int(s[j])<<8 | int(s[j+1])
			f.shift[pair] = min(f.shift[pair], uint8(f.m-2-j))
		}
	}
	return f
}

// holdsSecret reports whether text holds one of f's secrets; a nil f has
// none.
func holdsSecret[T string | []byte](f *secretFinder, text T) bool {
	if f == nil {
		return false
	}
	m := f.m
	// i is where the window's last pair starts: the window is text[i-m+2 : i+2].
	for i := m - 2; i+1 < len(text); {
		step := f.shift[int(text[i])<<8|int(text[i+1])]
		if step == 0 {
			at := text[i-m+2:]
			for _, s := range f.secrets {
				if len(at) >= len(s) && string(at[:len(s)]) == s {
					return true
				}
			}
			step = 1
		}
		i += int(step)
	}
	return false
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
