package cli

import (
	"slices"
	"strings"
	"testing"
)

// FuzzReorderArgs: moving a command's flags before its words never loses,
// duplicates or invents an argument (only a "--" may be added), and leaves
// a command line without a subcommand alone.
func FuzzReorderArgs(f *testing.F) {
	for _, seed := range []string{
		"spawn\x00run\x00fix the bug\x00--mode\x00solo",
		"spawn\x00run\x00--json\x00--\x00remove\x00--force",
		"spawn\x00run\x00-\x00--repo\x00/x",
		"spawn\x00run\x00--mode",
		"spawn\x00demo\x00--claude=x\x00y",
		"spawn\x00frob\x00--x",
		"spawn",
	} {
		f.Add(seed)
	}
	app := newApp(&deps{}, runRun, runDemo)
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		out := reorderArgs(app, args)
		if len(args) < 2 {
			if !slices.Equal(args, out) {
				t.Fatalf("reorderArgs(%q) = %q", args, out)
			}
			return
		}
		count := func(list []string) map[string]int {
			m := map[string]int{}
			for _, a := range list {
				m[a]++
			}
			return m
		}
		in, got := count(args), count(out)
		if got["--"] > in["--"]+1 {
			t.Fatalf("reorderArgs(%q) = %q: added more than one --", args, out)
		}
		delete(in, "--")
		delete(got, "--")
		for a, n := range in {
			if got[a] != n {
				t.Fatalf("reorderArgs(%q) = %q: %q appears %d times, want %d", args, out, a, got[a], n)
			}
		}
		for a := range got {
			if in[a] == 0 {
				t.Fatalf("reorderArgs(%q) = %q: %q invented", args, out, a)
			}
		}
	})
}
