package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
)

// The version and commit `make build` stamps into the binary at link time
// (-ldflags -X); empty in a binary built otherwise. Nothing writes them
// at run time.
var (
	buildVersion string // `git describe --tags --dirty`, "" without a tag
	buildCommit  string // the commit, 12 hex digits, with "-dirty" for a modified tree
)

// pseudoVersionRE is a Go pseudo-version's last part, the commit
// ("v0.0.0-20261126213000-0123456789ab").
var pseudoVersionRE = lazy.MustCompile(`-(?:\d+\.)?\d{14}-([0-9a-f]{12})$`)

// build is the version and the commit of this binary: what `make build`
// stamped, else the module's version and the commit `go install` or `go
// build` recorded (runtime/debug.ReadBuildInfo), else "devel" and "".
func build() (version, commit string) {
	if buildVersion != "" || buildCommit != "" {
		version = buildVersion
		if version == "" {
			version = "devel"
		}
		return version, buildCommit
	}
	version = "devel"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return version, ""
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		version = v
		if m := pseudoVersionRE.FindStringSubmatch(v); m != nil {
			commit = m[1]
		}
	}
	dirty := false
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			commit = s.Value[:12]
		case s.Key == "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && commit != "" {
		commit += "-dirty"
	}
	return version, commit
}

// version is this binary's version as one word, for the MCP handshake and
// the like: the version, or "devel-<commit>" when only the commit is
// known. It never holds a space.
func version() string {
	v, c := build()
	if v == "devel" && c != "" {
		return v + "-" + c
	}
	return v
}

// versionLine is what spawn version prints: "spawn v1.2.0 (commit
// 0123456789ab)", the commit left out when unknown or already in the
// version.
func versionLine() string {
	v, c := build()
	if c == "" || strings.Contains(v, c[:min(len(c), 7)]) {
		return "spawn " + v
	}
	return fmt.Sprintf("spawn %s (commit %s)", v, c)
}
