package spawn

import (
	"fmt"

	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// limitKeys are the configuration keys of the limits the watcher stops an
// agent at.
var limitKeys = map[watcher.StopReason]string{
	watcher.StopIdleTimeout:  "spawn.idle_timeout",
	watcher.StopTotalTimeout: "spawn.total_timeout",
	watcher.StopToolTimeout:  "spawn.tool_timeout",
	watcher.StopMaxTurns:     "spawn.max_turns",
	watcher.StopMaxCost:      "spawn.max_cost_usd",
}

// limitKind is the kind of error of an agent stopped at a limit: budget
// for turns and cost, timeout for the rest.
func limitKind(stop watcher.StopReason) fault.Kind {
	if stop == watcher.StopMaxTurns || stop == watcher.StopMaxCost {
		return fault.KindBudget
	}
	return fault.KindTimeout
}

// limitStop is the sentence for an agent the watcher stopped at a limit:
// which limit, its value, and every way to raise it.
func limitStop(cli string, stop watcher.StopReason, cfg config.Config, turns int, tool string, spent float64) string {
	ways := config.Ways(limitKeys[stop])
	switch stop {
	case watcher.StopIdleTimeout:
		return fmt.Sprintf("%s printed nothing for %s (the idle timeout) and was stopped; if it needs longer, raise it with %s",
			cli, config.FormatDuration(cfg.Spawn.IdleTimeout), ways)
	case watcher.StopTotalTimeout:
		return fmt.Sprintf("%s ran for %s (the total timeout) and was stopped; to give it longer, raise it with %s",
			cli, config.FormatDuration(cfg.Spawn.TotalTimeout), ways)
	case watcher.StopToolTimeout:
		return fmt.Sprintf("%s's tool call %q printed nothing for %s (the tool timeout) and was stopped; if the command needs longer, raise it with %s",
			cli, tool, config.FormatDuration(cfg.Spawn.ToolTimeout), ways)
	case watcher.StopMaxTurns:
		return fmt.Sprintf("%s used up its budget of %d turns (max_turns) after %d turns and was stopped; raise it with %s",
			cli, cfg.Spawn.MaxTurns, turns, ways)
	case watcher.StopMaxCost:
		return fmt.Sprintf("%s reached the run's cost budget of $%g (about $%.4f spent by the coder and the reviewers together) and was stopped; raise it with %s",
			cli, cfg.Spawn.MaxCostUSD, spent, ways)
	}
	return fmt.Sprintf("%s was stopped (%s)", cli, stop)
}

// sandboxLimitStop is the sentence for an agent the sandbox's resource
// limits stopped: which limit, what it is (what), and how to raise it.
func sandboxLimitStop(cli string, stop watcher.StopReason, what string) string {
	key := map[watcher.StopReason]string{watcher.StopMaxProcesses: "sandbox.max_processes", watcher.StopMaxMemory: "sandbox.max_memory", watcher.StopMaxDisk: "sandbox.max_disk"}[stop]
	return fmt.Sprintf("%s reached the sandbox's %s limit (%s) and was stopped; if the work needs more, raise it with %s",
		cli, key[len("sandbox."):], what, config.Ways(key))
}

// budgetUsedUp is the sentence for an agent that was not started because
// the run's cost budget was spent.
func budgetUsedUp(cli string, budget, spent float64) string {
	return fmt.Sprintf("the run's cost budget of $%g (max_cost_usd) is used up (about $%.4f spent by the coder and the reviewers), so %s was not started; raise it with %s",
		budget, spent, cli, config.Ways("spawn.max_cost_usd"))
}
