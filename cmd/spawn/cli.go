package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn"
)

// version is set by the build (-ldflags "-X main.version=...").
var version = "dev"

// IO is where spawn talks to its user.
type IO struct {
	In     io.Reader
	Out    io.Writer // results: the summary, or the one JSON document
	Err    io.Writer // notes, progress and errors
	ErrTTY bool      // stderr is a terminal
}

// deps is what the commands need from the outside world.
type deps struct {
	io  IO
	env []string
	// hurry is closed by a second Ctrl-C: stop waiting for agents to exit.
	hurry <-chan struct{}
}

// Main runs spawn with args and returns its exit code. It is the one place
// where errors become exit codes.
func Main(args, env []string, in io.Reader, out, errw io.Writer) int {
	// Everything spawn prints goes through the redactor: no secret value
	// from the environment reaches stdout or stderr.
	red := observability.NewRedactor(env)
	errTTY := isTerminal(errw)
	out, errw = redacting{out, red}, redacting{errw, red}
	ctx, hurry, stop := interrupts(errw)
	defer stop()
	d := &deps{io: IO{In: in, Out: out, Err: errw, ErrTTY: errTTY}, env: env, hurry: hurry}
	app := newApp(d, runRun, runDemo)
	err := app.RunContext(ctx, reorderArgs(app, args))
	if err == nil {
		return 0
	}
	var exit exitCode
	if errors.As(err, &exit) {
		return int(exit)
	}
	var usage usageError
	if errors.As(err, &usage) {
		err = &spawn.Error{Kind: spawn.KindUsage, Msg: err.Error()}
	}
	fmt.Fprintf(errw, "spawn: %v\n", err)
	return spawn.ExitCode(err, "")
}

// interrupts turns the first SIGINT or SIGTERM into a cancelled context
// (agents are stopped gracefully, their work committed, the record written)
// and the second into a closed hurry channel (agents are killed at once).
func interrupts(errw io.Writer) (context.Context, <-chan struct{}, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	hurry := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
			fmt.Fprintln(errw, "\nspawn: interrupted; stopping the agent and saving its work (interrupt again to kill it at once)")
		case <-done:
			return
		}
		select {
		case <-sigs:
			close(hurry)
		case <-done:
		}
	}()
	return ctx, hurry, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// redacting writes through w with secret values replaced. spawn's output
// is written a line or a document at a time, so a secret is never split
// across two writes.
type redacting struct {
	w   io.Writer
	red *observability.Redactor
}

func (r redacting) Write(b []byte) (int, error) {
	if _, err := r.w.Write(r.red.Bytes(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// exitCode is returned by a command that already reported its outcome.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit code %d", int(e)) }

// usageError is a flag or argument the user got wrong.
type usageError struct{ error }

func onUsageError(_ *cli.Context, err error, _ bool) error { return usageError{err} }

func newApp(d *deps, run func(context.Context, *deps, *runOptions) error, demo func(context.Context, *deps, *demoOptions) error) *cli.App {
	return &cli.App{
		Name:      "spawn",
		Usage:     "hand a coding task to an LLM coder in a git-worktree sandbox, have another LLM review it, record everything",
		Version:   version,
		Reader:    d.io.In,
		Writer:    d.io.Out,
		ErrWriter: d.io.Err,
		// Errors are reported once, by Main.
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError:    onUsageError,
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{fmt.Errorf("unknown command %q; run spawn --help", c.Args().First())}
			}
			return cli.ShowAppHelp(c)
		},
		Commands: []*cli.Command{
			newRunCmd(d, run),
			newDemoCmd(d, demo),
			{
				Name:  "version",
				Usage: "print spawn's version",
				Action: func(c *cli.Context) error {
					fmt.Fprintf(d.io.Out, "spawn %s\n", version)
					return nil
				},
			},
		},
	}
}

// reorderArgs moves the flags of a subcommand before its positional
// arguments, so `spawn run "task" --mode solo` works as users type it.
// Everything after "--" stays positional.
func reorderArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	var cmd *cli.Command
	for _, c := range app.Commands {
		if c.HasName(args[1]) {
			cmd = c
		}
	}
	if cmd == nil {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	var flags, positional []string
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			positional = append(positional, rest[i+1:]...)
			break
		}
		if len(a) > 1 && strings.HasPrefix(a, "-") {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(rest) {
				flags = append(flags, rest[i+1])
				i++
			}
			continue
		}
		positional = append(positional, a)
	}
	out := append([]string{args[0], args[1]}, flags...)
	if len(positional) > 0 {
		out = append(append(out, "--"), positional...)
	}
	return out
}

// printJSON writes v as the one JSON document on stdout.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
