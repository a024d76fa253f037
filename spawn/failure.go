package spawn

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
	"github.com/infinite-improbability-drive/spawn/internal/relay"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

var (
	// authRE matches what an agent CLI says when it has no credential or
	// the model API refused it.
	authRE = lazy.MustCompile(`(?i)must specify the \w*API_KEY|api[ _-]?key|not logged in|failed to authenticate|please run /login|unauthenticated|permission_denied|invalid x-api-key|\b(401|403)\b|auth method|login required`)
	// refusedRE matches a credential the model API refused.
	refusedRE = lazy.MustCompile(`(?i)failed to authenticate|invalid x-api-key|unauthenticated|permission_denied|\b(401|403)\b`)
	// unreachableRE matches a model API that could not be reached at all.
	unreachableRE = lazy.MustCompile(`(?i)ECONNREFUSED|ConnectionRefused|connection refused|unable to connect|ENOTFOUND|EAI_AGAIN|getaddrinfo|fetch failed|ETIMEDOUT|ECONNRESET|` + regexp.QuoteMeta(relay.UnreachablePrefix))
	// relayUnreachableRE finds the host and the cause in the relay's
	// answer for an upstream it could not reach, as a CLI quotes it (claude
	// adds ". This is a server-side issue..." after it, 2.1.197 with a
	// space before the period; gemini quotes it in JSON with its newline
	// escaped).
	relayUnreachableRE = lazy.MustCompile(regexp.QuoteMeta(relay.UnreachablePrefix) + `(\S+?): (.+?)(?:\s*\.(?:\s|$)|\\+n|["\n]|$)`)
	// causeRE matches a line that says why a CLI failed, as opposed to its
	// start-up noise and stack traces.
	causeRE = lazy.MustCompile(`(?i)error|must|refused|denied|failed|cannot|unable|invalid|not found|not logged`)
	// noiseRE matches lines that never are the cause: stack frames, gemini's
	// start-up notices.
	noiseRE = lazy.MustCompile(`^\s*at |^\s*\^|^\s*[{}\[\]]|256-color|Ripgrep is not available|\[STARTUP\]|Loaded cached credentials|^\s*$`)
)

// causeLine is the line of an agent's stderr that says why it failed: the
// first line that speaks of an error and is not a stack frame or start-up
// noise, else the last meaningful line, "" when there is none.
func causeLine(stderr string) string {
	var last string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		if noiseRE.MatchString(line) {
			continue
		}
		if authRE.MatchString(line) || unreachableRE.MatchString(line) {
			return line
		}
		if last == "" && causeRE.MatchString(line) {
			last = line
		}
	}
	if last != "" {
		return last
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); !noiseRE.MatchString(l) {
			return l
		}
	}
	return ""
}

// stderrOf is the stderr transcript of the agent process with the
// reaper pid, "" when it cannot be read.
func (r *run) stderrOf(pid int) string {
	r.record.mu.Lock()
	name := ""
	for _, c := range r.rec.CommandLines {
		if c.Pid == pid {
			name = c.Stderr
		}
	}
	r.record.mu.Unlock()
	if name == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(r.dir.Dir, name))
	if err != nil {
		return ""
	}
	return string(b)
}

// unreachableAdvice is what to do about a model API that cannot be
// reached, whose base URL the variable baseVar names.
func unreachableAdvice(baseVar string) string {
	return "check the network, the proxy (HTTPS_PROXY) and the API base URL (" + baseVar + "), then run again; spawn doctor tries to reach each API"
}

// failure classifies what an agent said when it failed without an HTTP
// status: an authentication problem, a model API it could not reach (whose
// base URL the variable baseVar names), or anything else (""), with the
// sentence that tells the user what to do.
func failure(cli, baseVar, said string) (fault.Kind, string) {
	switch {
	case relayUnreachableRE.MatchString(said):
		m := relayUnreachableRE.FindStringSubmatch(said)
		return fault.KindUnreachable, cli + " could not reach the model API at " + m[1] + ": " + strings.TrimSpace(m[2]) + "; " + unreachableAdvice(baseVar)
	case unreachableRE.MatchString(said):
		return fault.KindUnreachable, unreachable(cli, baseVar, said)
	case refusedRE.MatchString(said):
		return fault.KindAuth, "the model API refused " + cli + "'s credentials (" + oneLine(said) + "); set its API key or log in to it, then run again"
	case authRE.MatchString(said):
		return fault.KindAuth, cli + " has no usable credential (" + oneLine(said) + "); set its API key or log in to it, then run again"
	}
	return "", ""
}

// failureOf is failure for what the CLI's adapter made of the turn: a
// model API it could not reach, or a credential refused.
func failureOf(cli, baseVar string, f runners.Failure) (fault.Kind, string) {
	switch f.Kind {
	case runners.FailureUnreachable:
		return fault.KindUnreachable, unreachable(cli, baseVar, f.Message)
	case runners.FailureAuth:
		return fault.KindAuth, "the model API refused " + cli + "'s credentials (" + oneLine(f.Message) + "); set its API key or log in to it, then run again"
	}
	return "", ""
}

func unreachable(cli, baseVar, said string) string {
	return cli + " could not reach the model API (" + oneLine(said) + "); " + unreachableAdvice(baseVar)
}
