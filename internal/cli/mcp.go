package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/internal/mcpserver"
	"github.com/infinite-improbability-drive/spawn/observability"
)

// mcpOptions is `spawn mcp` after flag parsing.
type mcpOptions struct {
	Repo string
}

func newMCPCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve spawn's tools to an MCP host (Claude Code, the Gemini CLI) on stdin and stdout",
		Description: "A Model Context Protocol server on stdio: a host LLM starts runs (spawn_start), follows them\n" +
			"(spawn_status, spawn_wait), reads their outcome (spawn_result), stops them (spawn_cancel),\n" +
			"messages their coder (spawn_send) and lists them (spawn_list); spawn_run starts one and waits.\n" +
			"Runs go on in the background when the server stops; spawn_list finds them again.\n" +
			"stdout carries JSON-RPC only; notes go to stderr.\n\n" +
			"Example:\n   claude mcp add spawn -- spawn mcp",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "repo", Usage: "the git repository the tools work on when a call names none", Value: "."},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError{fmt.Errorf("spawn mcp takes no arguments (got %q); the host sends the tasks", c.Args().First())}
			}
			return runMCP(c.Context, d, &mcpOptions{Repo: c.String("repo")})
		},
	}
}

// runMCP is `spawn mcp`: it serves the MCP tools on d.io.In and d.io.Out
// until the client closes stdin or spawn is interrupted.
func runMCP(ctx context.Context, d *deps, opts *mcpOptions) error {
	t := &mcp.IOTransport{Reader: io.NopCloser(d.io.In), Writer: nopWriteCloser{d.io.Out}}
	return mcpserver.Serve(ctx, d.mcpOptions(opts.Repo), t)
}

// mcpOptions wires the MCP server to this spawn: its repository, its
// detached runs and its way of showing a run.
func (d *deps) mcpOptions(dir string) mcpserver.Options {
	return mcpserver.Options{
		Dir:        dir,
		Version:    version(),
		OpenRepo:   d.openRepo,
		Start:      d.startFromMCP,
		LastAction: lastAction,
		RenderEvents: func(events []observability.Event) []string {
			var b bytes.Buffer
			v := newLogView(&b)
			for _, e := range events {
				v.Event(e)
			}
			v.Close()
			return strings.Split(b.String(), "\n")
		},
	}
}

// startFromMCP starts the run an MCP call asked for as spawn run --detach.
func (d *deps) startFromMCP(ctx context.Context, req mcpserver.StartRequest) (string, error) {
	var flags []string
	for _, f := range []struct{ name, val string }{
		{"mode", req.Mode}, {"base", req.Base}, {"branch", req.Branch}, {"config", req.Config}, {"model", req.Model}, {"coder", req.Coder},
	} {
		if f.val != "" {
			flags = append(flags, "--"+f.name+"="+f.val)
		}
	}
	for _, r := range req.Reviewers {
		flags = append(flags, "--reviewer="+r)
	}
	if req.IdleTimeout > 0 {
		flags = append(flags, "--idle-timeout="+req.IdleTimeout.String())
	}
	if req.TotalTimeout > 0 {
		flags = append(flags, "--total-timeout="+req.TotalTimeout.String())
	}
	return d.startDetached(ctx, detachRequest{Repo: req.Repo, Flags: flags, Task: []string{req.Task}})
}

// nopWriteCloser is an io.WriteCloser whose Close does nothing: the MCP
// transport closes its writer, and spawn's stdout outlives it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
