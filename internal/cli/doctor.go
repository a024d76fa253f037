package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/internal/text"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

// doctorOptions is `spawn doctor` after flag parsing.
type doctorOptions struct {
	Repo   string
	Config string
	JSON   bool
}

func newDoctorCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check what a run needs: the repository, git, the agent CLIs, their logins and model APIs, the configuration, the sandbox",
		Description: "One line per check, ok or what to do; exit 0 only when every check passes.\n" +
			"Credentials are checked for presence only, never printed. Each model API a run would use\n" +
			"(ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL, else the providers' own) gets one request without\n" +
			"credentials: any HTTP answer shows it is reachable, and no model is called. In github mode, the GitHub\n" +
			"token (SPAWN_GITHUB_TOKEN, GITHUB_TOKEN, GH_TOKEN, else `gh auth token`) is shown to\n" +
			"GitHub (GITHUB_API_URL, else api.github.com) and its scopes checked.\n\n" +
			"Example:\n   spawn doctor\n   spawn doctor --json",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "repo", Usage: "the git repository to check for", Value: "."},
			&cli.StringFlag{Name: "config", Usage: "the configuration file (default: <repo>/spawn-team.toml, then $XDG_CONFIG_HOME/spawn/spawn-team.toml)"},
			&cli.BoolFlag{Name: "json", Usage: "print the checks as one JSON document"},
		},
		Action: func(c *cli.Context) error {
			return runDoctor(c.Context, d, &doctorOptions{Repo: c.String("repo"), Config: c.String("config"), JSON: c.Bool("json")})
		},
	}
}

// runDoctor is `spawn doctor`: exit 0 when every check passes, 2 otherwise.
func runDoctor(ctx context.Context, d *deps, opts *doctorOptions) error {
	checks := spawn.Doctor(ctx, opts.Repo, opts.Config, d.env)
	failed := 0
	for _, c := range checks {
		if !c.OK {
			failed++
		}
	}
	if opts.JSON {
		if err := printJSON(d.io.Out, checks); err != nil {
			return err
		}
	} else {
		for _, c := range checks {
			mark := "ok  "
			if !c.OK {
				mark = "FIX "
			}
			fmt.Fprintf(d.io.Out, "%s %-13s %s\n", mark, c.Name, c.Detail)
		}
	}
	if failed > 0 {
		if !opts.JSON {
			fmt.Fprintf(d.io.Out, "%s to fix before a run\n", text.Plural(failed, "check"))
		}
		return exitCode(fault.ExitUsage)
	}
	return nil
}
