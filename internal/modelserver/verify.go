package modelserver

import (
	"fmt"
	"strings"
)

// Verify returns an error naming every scripted turn no request was
// answered with: a test whose scenario holds a turn the agents never
// reached has not shown what it meant to show. Call it after the agents
// are done (a test's deferred check).
func (s *Server) Verify() error {
	served := map[turnKey]bool{}
	for _, r := range s.Requests() {
		if r.Main && r.Script >= 0 {
			served[turnKey{api: r.API, script: r.Script, turn: r.Turn}] = true
		}
	}
	var missing []string
	for _, api := range []struct {
		name    string
		scripts []Script
	}{{APIAnthropic, s.sc.Anthropic}, {APIGemini, s.sc.Gemini}, {APIOpenAI, s.sc.OpenAI}} {
		for si, script := range api.scripts {
			for ti := range script.Turns {
				if !served[turnKey{api: api.name, script: si, turn: ti}] {
					missing = append(missing, fmt.Sprintf("%s script %d (match %q) turn %d", api.name, si, script.Match, ti))
				}
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("modelserver: scripted turns never served: %s", strings.Join(missing, "; "))
	}
	return nil
}
