package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
)

// tighten returns after (before with the repository's file at path
// decoded over it; md says which keys the file set) with every value of
// the file's that would lower spawn's security put back to before's, and
// a note for each. The file may tighten anything.
func tighten(before, after Config, md toml.MetaData, path string) (Config, []string) {
	t := &tightener{md: md, path: path}
	t.modes(&after, before)
	t.runners(&after, before)
	t.lists(&after, before)
	t.limits(&after, before)
	t.github(&after, before)
	return after, t.notes
}

// tightener puts back what a repository's file (at path; md says which
// keys it set) asked for that would lower spawn's security, and notes
// each value it put back.
type tightener struct {
	md    toml.MetaData
	path  string
	notes []string
}

// defined says the file set key ("sandbox.isolation").
func (t *tightener) defined(key string) bool { return t.md.IsDefined(strings.Split(key, ".")...) }

// note says that the file asked for key = asked, which would do how, and
// that spawn keeps kept.
func (t *tightener) note(key string, asked, kept any, how string) {
	t.notes = append(t.notes, fmt.Sprintf("%s asks for %s = %s, which would %s; spawn keeps %s (only your own spawn-team.toml, an environment variable or a flag can change it)",
		t.path, key, show(asked), how, show(kept)))
}

// rank keeps kept when the file set key to a value before it in order
// (from the loosest to the strictest). A value order does not know was
// refused by Validate.
func rank[T ~string](t *tightener, key string, asked *T, kept T, order []T, how string) {
	if i := slices.Index(order, *asked); t.defined(key) && i >= 0 && i < slices.Index(order, kept) {
		t.note(key, string(*asked), string(kept), how)
		*asked = kept
	}
}

// flag keeps kept when the file set key to loose, and kept is not.
func (t *tightener) flag(key string, asked *bool, kept, loose bool, how string) {
	if t.defined(key) && *asked == loose && kept != loose {
		t.note(key, *asked, kept, how)
		*asked = kept
	}
}

// subset keeps of a list the entries kept has; a list that must not be
// empty (nonEmpty) and would be is kept whole.
func (t *tightener) subset(key string, asked *[]string, kept []string, nonEmpty bool, how string) {
	if !t.defined(key) {
		return
	}
	var in, out []string
	for _, v := range *asked {
		if slices.Contains(kept, v) {
			in = append(in, v)
		} else {
			out = append(out, v)
		}
	}
	if len(in) == 0 && nonEmpty {
		in = kept
	}
	if len(out) > 0 {
		t.note(key, out, in, how)
		*asked = in
	}
}

// superset puts back into a list the entries of kept it leaves out.
func (t *tightener) superset(key string, asked *[]string, kept []string, how string) {
	if !t.defined(key) {
		return
	}
	var dropped []string
	for _, v := range kept {
		if !slices.Contains(*asked, v) {
			dropped = append(dropped, v)
			*asked = append(*asked, v)
		}
	}
	if len(dropped) > 0 {
		t.notes = append(t.notes, fmt.Sprintf("%s leaves %s out of %s, which would %s; spawn keeps them", t.path, show(dropped), key, how))
	}
}

// capped keeps kept, a limit where 0 means none, when the file would lift
// it (0) or raise it: a limit may be set or lowered. shown is how a value
// is written in the note.
func capped[T ~int | ~int64 | ~float64](t *tightener, key string, asked *T, kept T, shown func(T) any, how string) {
	if t.defined(key) && kept > 0 && (*asked <= 0 || *asked > kept) {
		t.note(key, shown(*asked), shown(kept), how)
		*asked = kept
	}
}

// atMost keeps kept when the file would raise key above it.
func atMost[T cmp.Ordered](t *tightener, key string, asked *T, kept T, how string) {
	if t.defined(key) && *asked > kept {
		t.note(key, *asked, kept, how)
		*asked = kept
	}
}

// modes: the isolation, the network, the caches, the coder's permission
// mode, the board's rule, the severity that blocks, the reviewers' family.
func (t *tightener) modes(after *Config, before Config) {
	rank(t, "sandbox.isolation", &after.Sandbox.Isolation, before.Sandbox.Isolation, []isolation.Mode{"none", "auto", "bwrap", "seatbelt"}, "lower the agents' isolation")
	rank(t, "sandbox.network", &after.Sandbox.Network, before.Sandbox.Network, []isolation.Network{"open", "auto", "model-only"}, "open the agents' network")
	rank(t, "sandbox.cache", &after.Sandbox.Cache, before.Sandbox.Cache, []isolation.Cache{"shared", "repository", "none"}, "share the coder's caches more widely")
	// claude's permission modes from the loosest to the strictest.
	rank(t, "permissions.mode", &after.Permissions.Mode, before.Permissions.Mode, []string{"auto", "acceptEdits", "default", "dontAsk", "plan"}, "let the coder do more without asking")
	rank(t, "spawn-team.board", &after.Team.Board, before.Team.Board, []string{BoardMajority, BoardUnanimous}, "approve with fewer reviewers agreeing")
	blockOrder := []string{"none"}
	for i := len(observability.Severities()) - 1; i >= 0; i-- {
		blockOrder = append(blockOrder, string(observability.Severities()[i]))
	}
	rank(t, "spawn-team.block_at", &after.Team.BlockAt, before.Team.BlockAt, blockOrder, "let findings that block now pass")
	t.flag("spawn-team.same_family", &after.Team.SameFamily, before.Team.SameFamily, true, "let a model review its own family's work")
}

// runners: a repository names no binary, and only narrows a reviewer's
// approval mode and tools.
func (t *tightener) runners(after *Config, before Config) {
	after.Runners = after.Clone().Runners
	for name, asked := range after.Runners {
		kept, ok := before.Runners[name]
		if !ok {
			continue
		}
		key := "runners." + name
		if t.defined(key+".command") && asked.Command != kept.Command {
			t.note(key+".command", asked.Command, kept.Command, "run a program the repository chose as an agent")
			asked.Command = kept.Command
		}
		rank(t, key+".approval_mode", &asked.ApprovalMode, kept.ApprovalMode, []string{"yolo", "auto_edit", "default", "plan"}, "let the reviewer write")
		after.Runners[name] = asked
	}
}

// lists: the coder's tools and grants, the trusted authors, each
// reviewer's tools.
func (t *tightener) lists(after *Config, before Config) {
	t.subset("permissions.allowed_tools", &after.Permissions.AllowedTools, before.Permissions.AllowedTools, false, "widen the coder's tools")
	t.subset("permissions.escalatable", &after.Permissions.Escalatable, before.Permissions.Escalatable, false, "widen what may be granted to the coder")
	t.subset("github.trusted_authors", &after.GitHub.TrustedAuthors, before.GitHub.TrustedAuthors, false, "trust more authors' review threads")
	t.superset("permissions.denied_tools", &after.Permissions.DeniedTools, before.Permissions.DeniedTools, "give the coder tools your configuration denies")
	for name, asked := range after.Runners {
		kept := before.Runners[name]
		t.subset("runners."+name+".allowed_tools", &asked.AllowedTools, kept.AllowedTools, len(kept.AllowedTools) > 0, "widen the reviewer's tools")
		t.superset("runners."+name+".excluded_tools", &asked.ExcludedTools, kept.ExcludedTools, "give the reviewer tools your configuration excludes")
		after.Runners[name] = asked
	}
}

// limits: budgets, the sandbox's limits, rounds, escalations, reviewers
// at once, answers, timeouts.
func (t *tightener) limits(after *Config, before Config) {
	same := func(v float64) any { return v }
	size := func(v Size) any { return isolation.Size(int64(v)) }
	capped(t, "spawn.max_cost_usd", &after.Spawn.MaxCostUSD, before.Spawn.MaxCostUSD, same, "raise the budget")
	capped(t, "sandbox.max_memory", &after.Sandbox.MaxMemory, before.Sandbox.MaxMemory, size, "raise a limit")
	capped(t, "sandbox.max_disk", &after.Sandbox.MaxDisk, before.Sandbox.MaxDisk, size, "raise a limit")
	count := func(v int) any { return v }
	capped(t, "sandbox.max_processes", &after.Sandbox.MaxProcesses, before.Sandbox.MaxProcesses, count, "raise a limit")
	capped(t, "spawn.max_turns", &after.Spawn.MaxTurns, before.Spawn.MaxTurns, count, "raise the budget")
	atMost(t, "spawn-team.max_iterations", &after.Team.MaxIterations, before.Team.MaxIterations, "raise a limit")
	atMost(t, "spawn-team.max_escalations", &after.Team.MaxEscalations, before.Team.MaxEscalations, "raise a limit")
	atMost(t, "spawn-team.max_concurrent_reviewers", &after.Team.MaxConcurrentReviewers, before.Team.MaxConcurrentReviewers, "raise a limit")
	atMost(t, "spawn.max_auto_answers", &after.Spawn.MaxAutoAnswers, before.Spawn.MaxAutoAnswers, "raise a limit")
	atMost(t, "spawn.idle_timeout", &after.Spawn.IdleTimeout, before.Spawn.IdleTimeout, "raise a limit")
	atMost(t, "spawn.tool_timeout", &after.Spawn.ToolTimeout, before.Spawn.ToolTimeout, "raise a limit")
	atMost(t, "spawn.total_timeout", &after.Spawn.TotalTimeout, before.Spawn.TotalTimeout, "raise a limit")
}

// github: CI changes, people's threads, and verified fixes.
func (t *tightener) github(after *Config, before Config) {
	t.flag("github.allow_ci_changes", &after.GitHub.AllowCIChanges, before.GitHub.AllowCIChanges, true, "let spawn push changes to CI configuration")
	t.flag("github.resolve_human_threads", &after.GitHub.ResolveHumanThreads, before.GitHub.ResolveHumanThreads, true, "let spawn resolve people's review threads")
	t.flag("github.verify_fixes", &after.GitHub.VerifyFixes, before.GitHub.VerifyFixes, false, "let spawn pr answer people's threads without a reviewer checking the fix")
}

// show writes a value as a configuration file would.
func show(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case []string:
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = fmt.Sprintf("%q", s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	case time.Duration:
		return fmt.Sprintf("%q", x.String())
	}
	return fmt.Sprint(v)
}
