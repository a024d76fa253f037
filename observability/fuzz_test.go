package observability

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzRedact checks the Redactor on any two secrets and any text: each
// secret long enough to be redacted is never left in the output, neither as
// written nor as either JSON encoder writes it inside a JSON document (the
// markers are taken out before looking, so a secret that is a piece of
// "[REDACTED]" does not count); a Redactor without secrets changes nothing;
// Bytes and String agree.
func FuzzRedact(f *testing.F) {
	f.Add("sk-ant-canary-0123456789", "hunter2hunter2", "key sk-ant-canary-0123456789 pw hunter2hunter2")
	f.Add(`ghp_with"quote\slash`, `p<ss"word&1234`, "cat .env\n")
	f.Add("ED]ABCDEFG", "abcdefgh", "[REDACTED]ABCDEFG efghijkl")
	f.Add("abcdefgh", "efghijkl", "abcdefghijkl")
	f.Add("REDACTED", "aaaaaaaa", "aaaaaaaaa")
	f.Add("line\u2028sep\x01ctl", "\xff\xfe\xfdinvalid", "<>&")
	f.Add("short", "", "short text")
	f.Fuzz(func(t *testing.T, s1, s2, text string) {
		r := NewRedactor([]string{"A_TOKEN=" + s1, "B_KEY=" + s2})
		redacting := false
		var secrets []string // those the check below can look for
		for _, s := range []string{s1, s2} {
			if len(s) >= minSecretLen {
				redacting = true
				if !strings.Contains(s, "\x00") {
					secrets = append(secrets, s)
				}
			}
		}
		in := text + s1 + text + s2 + text
		out := r.String(in)
		if got := string(r.Bytes([]byte(in))); got != out {
			t.Fatalf("Bytes %q, String %q", got, out)
		}
		if !redacting && out != in {
			t.Fatalf("no secret, but %q became %q", in, out)
		}
		docs := []string{in, goJSON(in, true), goJSON(in, false)}
		for _, s := range secrets {
			forms := []string{s, inner(goJSON(s, true)), inner(goJSON(s, false))}
			for _, doc := range docs {
				hidden := strings.ReplaceAll(r.String(doc), Redacted, "\x00")
				for _, form := range forms {
					if strings.Contains(hidden, form) {
						t.Fatalf("secret %q (as %q) left in %q", s, form, r.String(doc))
					}
				}
			}
		}
	})
}

// goJSON encodes s as a JSON string, with or without HTML escaping.
func goJSON(s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		panic(err) // a string always encodes
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// inner drops the quotes around an encoded JSON string.
func inner(quoted string) string { return quoted[1 : len(quoted)-1] }

// FuzzSecretFinder: a secretFinder finds a secret in a text exactly when
// a search for each secret does, whatever the secrets' lengths (from 2
// bytes; a Redactor's are 8 or more) and wherever they are in the text.
func FuzzSecretFinder(f *testing.F) {
	f.Add("sk-ant-canary-0123456789", "hunter2hunter2", "xx", "key sk-ant-canary-0123456789 pw hunter2hunter2", 3)
	f.Add("abcdefgh", "bcdefghi", "cdefghij", "abcdefgabcdefgXbcdefghi", 0)
	f.Add("aaaaaaaa", "aaab", "ab", "aaaaaaabaaaa", 7)
	f.Add("\xff\xfe", "\x00\x00\x00", "zz\xff", "\x00\x00\xff\xfe", 1)
	f.Fuzz(func(t *testing.T, s1, s2, s3, text string, at int) {
		var secrets []string
		for _, s := range []string{s1, s2, s3} {
			if len(s) >= 2 {
				secrets = append(secrets, s)
			}
		}
		if len(secrets) == 0 {
			return
		}
		finder := newSecretFinder(secrets)
		check := func(text string) {
			want := false
			for _, s := range secrets {
				want = want || strings.Contains(text, s)
			}
			if got := holdsSecret(finder, text); got != want {
				t.Fatalf("secrets %q in %q: found %v, want %v", secrets, text, got, want)
			}
			if got := holdsSecret(finder, []byte(text)); got != want {
				t.Fatalf("secrets %q in %q as bytes: found %v, want %v", secrets, text, got, want)
			}
		}
		check(text)
		// A secret at every place of the text, and cut at its ends.
		s := secrets[int(uint(at)%uint(len(secrets)))]
		for i := 0; i <= len(text); i++ {
			check(text[:i] + s + text[i:])
			check(text[:i] + s[:len(s)-1])
			check(s[1:] + text[i:])
		}
	})
}
