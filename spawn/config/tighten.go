package config

import (
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
	var notes []string
	note := func(key string, asked, kept any, how string) {
		notes = append(notes, fmt.Sprintf("%s asks for %s = %s, which would %s; spawn keeps %s (only your own spawn-team.toml, an environment variable or a flag can change it)",
			path, key, show(asked), how, show(kept)))
	}
	defined := func(key string) bool { return md.IsDefined(strings.Split(key, ".")...) }
	rank := func(key string, asked, kept *string, order []string, how string) {
		if i := slices.Index(order, *asked); defined(key) && i >= 0 && i < slices.Index(order, *kept) {
			note(key, *asked, *kept, how)
			*asked = *kept
		}
	}
	iso, isoBefore := string(after.Sandbox.Isolation), string(before.Sandbox.Isolation)
	rank("sandbox.isolation", &iso, &isoBefore, []string{"none", "auto", "bwrap", "seatbelt"}, "lower the agents' isolation")
	after.Sandbox.Isolation = isolation.Mode(iso)
	net, netBefore := string(after.Sandbox.Network), string(before.Sandbox.Network)
	rank("sandbox.network", &net, &netBefore, []string{"open", "auto", "model-only"}, "open the agents' network")
	after.Sandbox.Network = isolation.Network(net)
	cache, cacheBefore := string(after.Sandbox.Cache), string(before.Sandbox.Cache)
	rank("sandbox.cache", &cache, &cacheBefore, []string{"shared", "repository", "none"}, "share the coder's caches more widely")
	after.Sandbox.Cache = isolation.Cache(cache)
	// claude's permission modes from the loosest to the strictest.
	rank("permissions.mode", &after.Permissions.Mode, &before.Permissions.Mode, []string{"auto", "acceptEdits", "default", "dontAsk", "plan"}, "let the coder do more without asking")
	rank("spawn-team.board", &after.Team.Board, &before.Team.Board, []string{BoardMajority, BoardUnanimous}, "approve with fewer reviewers agreeing")
	blockOrder := []string{"none"}
	for i := len(observability.Severities()) - 1; i >= 0; i-- {
		blockOrder = append(blockOrder, string(observability.Severities()[i]))
	}
	rank("spawn-team.block_at", &after.Team.BlockAt, &before.Team.BlockAt, blockOrder, "let findings that block now pass")
	if defined("spawn-team.same_family") && after.Team.SameFamily && !before.Team.SameFamily {
		note("spawn-team.same_family", true, false, "let a model review its own family's work")
		after.Team.SameFamily = false
	}

	// The runners: a repository names no binary, and only narrows a
	// reviewer's tools and approval.
	after.Runners = after.Clone().Runners
	for name, asked := range after.Runners {
		kept, ok := before.Runners[name]
		if !ok {
			continue
		}
		key := "runners." + name
		if defined(key+".command") && asked.Command != kept.Command {
			note(key+".command", asked.Command, kept.Command, "run a program the repository chose as an agent")
			asked.Command = kept.Command
		}
		rank(key+".approval_mode", &asked.ApprovalMode, &kept.ApprovalMode, []string{"yolo", "auto_edit", "default", "plan"}, "let the reviewer write")
		after.Runners[name] = asked
	}

	// subset keeps of a list the entries before had; a list that must not
	// be empty (nonEmpty) and would be is before's.
	subset := func(key string, asked *[]string, kept []string, nonEmpty bool, how string) {
		if !defined(key) {
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
			note(key, out, in, how)
			*asked = in
		}
	}
	subset("permissions.allowed_tools", &after.Permissions.AllowedTools, before.Permissions.AllowedTools, false, "widen the coder's tools")
	subset("permissions.escalatable", &after.Permissions.Escalatable, before.Permissions.Escalatable, false, "widen what may be granted to the coder")
	subset("github.trusted_authors", &after.GitHub.TrustedAuthors, before.GitHub.TrustedAuthors, false, "trust more authors' review threads")
	superset := func(key string, asked *[]string, kept []string, how string) {
		if !defined(key) {
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
			notes = append(notes, fmt.Sprintf("%s leaves %s out of %s, which would %s; spawn keeps them", path, show(dropped), key, how))
		}
	}
	superset("permissions.denied_tools", &after.Permissions.DeniedTools, before.Permissions.DeniedTools, "give the coder tools your configuration denies")
	for name, asked := range after.Runners {
		kept := before.Runners[name]
		subset("runners."+name+".allowed_tools", &asked.AllowedTools, kept.AllowedTools, len(kept.AllowedTools) > 0, "widen the reviewer's tools")
		superset("runners."+name+".excluded_tools", &asked.ExcludedTools, kept.ExcludedTools, "give the reviewer tools your configuration excludes")
		after.Runners[name] = asked
	}

	// Budgets where 0 means none: a limit may be set or lowered.
	for _, b := range []struct {
		key           string
		asked, before *float64
	}{
		{"spawn.max_cost_usd", &after.Spawn.MaxCostUSD, &before.Spawn.MaxCostUSD},
	} {
		if defined(b.key) && *b.before > 0 && (*b.asked <= 0 || *b.asked > *b.before) {
			note(b.key, *b.asked, *b.before, "raise the budget")
			*b.asked = *b.before
		}
	}
	for _, b := range []struct {
		key           string
		asked, before *int64
	}{
		{"sandbox.max_memory", (*int64)(&after.Sandbox.MaxMemory), (*int64)(&before.Sandbox.MaxMemory)},
		{"sandbox.max_disk", (*int64)(&after.Sandbox.MaxDisk), (*int64)(&before.Sandbox.MaxDisk)},
	} {
		if defined(b.key) && *b.before > 0 && (*b.asked <= 0 || *b.asked > *b.before) {
			note(b.key, isolation.Size(*b.asked), isolation.Size(*b.before), "raise a limit")
			*b.asked = *b.before
		}
	}
	if defined("sandbox.max_processes") && before.Sandbox.MaxProcesses > 0 && (after.Sandbox.MaxProcesses <= 0 || after.Sandbox.MaxProcesses > before.Sandbox.MaxProcesses) {
		note("sandbox.max_processes", after.Sandbox.MaxProcesses, before.Sandbox.MaxProcesses, "raise a limit")
		after.Sandbox.MaxProcesses = before.Sandbox.MaxProcesses
	}
	if defined("spawn.max_turns") && before.Spawn.MaxTurns > 0 && (after.Spawn.MaxTurns <= 0 || after.Spawn.MaxTurns > before.Spawn.MaxTurns) {
		note("spawn.max_turns", after.Spawn.MaxTurns, before.Spawn.MaxTurns, "raise the budget")
		after.Spawn.MaxTurns = before.Spawn.MaxTurns
	}
	for _, l := range []struct {
		key           string
		asked, before *int
	}{
		{"spawn-team.max_iterations", &after.Team.MaxIterations, &before.Team.MaxIterations},
		{"spawn-team.max_escalations", &after.Team.MaxEscalations, &before.Team.MaxEscalations},
		{"spawn-team.max_concurrent_reviewers", &after.Team.MaxConcurrentReviewers, &before.Team.MaxConcurrentReviewers},
		{"spawn.max_auto_answers", &after.Spawn.MaxAutoAnswers, &before.Spawn.MaxAutoAnswers},
	} {
		if defined(l.key) && *l.asked > *l.before {
			note(l.key, *l.asked, *l.before, "raise a limit")
			*l.asked = *l.before
		}
	}
	for _, d := range []struct {
		key           string
		asked, before *time.Duration
	}{
		{"spawn.idle_timeout", &after.Spawn.IdleTimeout, &before.Spawn.IdleTimeout},
		{"spawn.tool_timeout", &after.Spawn.ToolTimeout, &before.Spawn.ToolTimeout},
		{"spawn.total_timeout", &after.Spawn.TotalTimeout, &before.Spawn.TotalTimeout},
	} {
		if defined(d.key) && *d.asked > *d.before {
			note(d.key, *d.asked, *d.before, "raise a limit")
			*d.asked = *d.before
		}
	}
	if defined("github.allow_ci_changes") && after.GitHub.AllowCIChanges && !before.GitHub.AllowCIChanges {
		note("github.allow_ci_changes", true, false, "let spawn push changes to CI configuration")
		after.GitHub.AllowCIChanges = false
	}
	if defined("github.resolve_human_threads") && after.GitHub.ResolveHumanThreads && !before.GitHub.ResolveHumanThreads {
		note("github.resolve_human_threads", true, false, "let spawn resolve people's review threads")
		after.GitHub.ResolveHumanThreads = false
	}
	if defined("github.verify_fixes") && !after.GitHub.VerifyFixes && before.GitHub.VerifyFixes {
		note("github.verify_fixes", false, true, "let spawn pr answer people's threads without a reviewer checking the fix")
		after.GitHub.VerifyFixes = true
	}
	return after, notes
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
