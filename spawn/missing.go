package spawn

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/infinite-improbability-drive/spawn/runners"
)

// agentsBin is where `make agents` installs the pinned agent CLIs, in
// spawn's checkout.
const agentsBin = "agents/node_modules/.bin"

// missingCLI is the sentence for an agent CLI that command does not find:
// the pinned version and how to get it, and, when `make agents` already put
// one in the checkout spawn runs from, where it is and how to use it.
func missingCLI(a runners.Adapter, command string) string {
	exe, err := os.Executable()
	if err != nil {
		exe = ""
	}
	return missingCLIFor(exe, a, command)
}

// missingCLIFor is missingCLI for the spawn binary at exe.
func missingCLIFor(exe string, a runners.Adapter, command string) string {
	cli, pin, npmPackage := a.Name(), a.Install().Pinned, a.Install().Package
	if strings.ContainsRune(command, '/') {
		return fmt.Sprintf("the %s CLI %s, which runners.%s.command names, does not exist or cannot run; fix the path, or install the pinned %s %s with `make agents` (into %s of spawn's checkout)",
			cli, command, cli, cli, pin, agentsBin)
	}
	if found := installedCLI(exe, command); found != "" {
		return fmt.Sprintf("the %s CLI (%s) is not on PATH, but `make agents` installed the pinned %s %s at %s: put %s on PATH, or set runners.%s.command to it",
			cli, command, cli, pin, found, filepath.Dir(found), cli)
	}
	return fmt.Sprintf("the %s CLI (%s) is not on PATH; install the pinned %s %s with `make agents` in spawn's checkout and put its %s on PATH, or run `npm install -g %s@%s`, or set runners.%s.command",
		cli, command, cli, pin, agentsBin, npmPackage, pin, cli)
}

// installedCLI is the path of command in agentsBin of the checkout the
// spawn binary at exe was built in (bin/spawn, or spawn at its top), ""
// when there is none.
func installedCLI(exe, command string) string {
	if exe == "" {
		return ""
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	dir := filepath.Dir(exe)
	for _, top := range []string{filepath.Dir(dir), dir} {
		p := filepath.Join(top, filepath.FromSlash(agentsBin), command)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
