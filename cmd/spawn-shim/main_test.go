package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// spawn starts its shim beside every agent (the agent's reaper, a
// reviewer's model bridge, the git helper), and each package the shim
// links costs every one of those starts its initialisation and its page
// faults. The shim links no HTTP, TLS, TOML or templates, and nothing of
// spawn's CLI, agent adapters, registry or orchestration.
func TestTheShimLinksNothingOfTheCLI(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	const mod = "github.com/infinite-improbability-drive/spawn/"
	for _, heavy := range []string{"net/http", "crypto/tls", "text/template", "github.com/BurntSushi/toml",
		mod + "internal/cli", mod + "internal/relay", mod + "runners", mod + "spawn/runs", mod + "spawn/isolation", mod + "team", mod + "watcher"} {
		if slices.Contains(deps, heavy) {
			t.Errorf("spawn-shim links %s", heavy)
		}
	}
}
