package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/spawn/config"
)

// limitFlags are the flags of spawn run and spawn resume that set a run's
// limits. Each help line shows the built-in default and the configuration
// key and environment variable that set it too; a flag that is not given
// sets nothing (limitOverrides), so the configuration's value stays.
func limitFlags() []cli.Flag {
	def := config.Default()
	usage := func(what, key string) string {
		return fmt.Sprintf("%s (also %s, %s)", what, key, config.EnvVar(key))
	}
	return []cli.Flag{
		&cli.IntFlag{Name: "max-iterations", DefaultText: fmt.Sprint(def.Team.MaxIterations),
			Usage: usage("review rounds before the loop stops with findings open", "spawn-team.max_iterations")},
		&cli.IntFlag{Name: "max-turns", DefaultText: "0, no limit",
			Usage: usage("stop the coder after this many model turns in one session", "spawn.max_turns")},
		&cli.Float64Flag{Name: "max-cost", DefaultText: "0, no budget",
			Usage: usage("stop the run once the coder and the reviewers have spent this many US dollars", "spawn.max_cost_usd")},
		&cli.DurationFlag{Name: "idle-timeout", DefaultText: config.FormatDuration(def.Spawn.IdleTimeout),
			Usage: usage("stop an agent that prints nothing for this long", "spawn.idle_timeout")},
		&cli.DurationFlag{Name: "tool-timeout", DefaultText: config.FormatDuration(def.Spawn.ToolTimeout),
			Usage: usage("stop a tool call (a build, a test run) that prints nothing for this long; it stands in for --idle-timeout while a tool runs", "spawn.tool_timeout")},
		&cli.DurationFlag{Name: "total-timeout", DefaultText: config.FormatDuration(def.Spawn.TotalTimeout),
			Usage: usage("stop an agent that runs this long", "spawn.total_timeout")},
	}
}

// limitOverrides are the limits the user set with limitFlags.
func limitOverrides(c *cli.Context) config.Overrides {
	var o config.Overrides
	if c.IsSet("max-iterations") {
		o.MaxIterations = ptr(c.Int("max-iterations"))
	}
	if c.IsSet("max-turns") {
		o.MaxTurns = ptr(c.Int("max-turns"))
	}
	if c.IsSet("max-cost") {
		o.MaxCostUSD = ptr(c.Float64("max-cost"))
	}
	if c.IsSet("idle-timeout") {
		o.IdleTimeout = ptr(c.Duration("idle-timeout"))
	}
	if c.IsSet("tool-timeout") {
		o.ToolTimeout = ptr(c.Duration("tool-timeout"))
	}
	if c.IsSet("total-timeout") {
		o.TotalTimeout = ptr(c.Duration("total-timeout"))
	}
	return o
}

func ptr[T any](v T) *T { return &v }
