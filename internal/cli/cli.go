package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
)

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
	// agents is set by the commands that run agents (run, resume, demo):
	// a Ctrl-C then says the agents are being stopped and their work saved.
	agents atomic.Bool
}

// Main runs spawn with args and returns its exit code. It is the one place
// where errors become exit codes (through spawn.ExitCode).
func Main(args, env []string, in io.Reader, out, errw io.Writer) int {
	return mainWith(args, env, in, out, errw, runDemo)
}

// mainWith is Main with demoF as spawn demo's run function (a test gives
// the demo a fake GitHub, which the spawn binary does not carry).
func mainWith(args, env []string, in io.Reader, out, errw io.Writer, demoF func(context.Context, *deps, *demoOptions) error) int {
	// Everything spawn prints goes through the redactor: no secret value
	// from the environment reaches stdout or stderr.
	red := observability.NewRedactor(env)
	errTTY := isTerminal(errw)
	out, errw = redacting{out, red}, redacting{errw, red}
	d := &deps{io: IO{In: in, Out: out, Err: errw, ErrTTY: errTTY}, env: env}
	ctx, hurry, stop := interrupts(errw, &d.agents)
	defer stop()
	d.hurry = hurry
	app := newApp(d, runRun, demoF)
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
		err = &fault.Error{Kind: fault.KindUsage, Msg: err.Error()}
	}
	fmt.Fprintf(errw, "spawn: %v\n", err)
	return spawn.ExitCode(err, observability.VerdictNone)
}

// interrupts turns the first SIGINT, SIGTERM or SIGHUP (the terminal
// closed, the ssh session dropped) into a cancelled context (agents are
// stopped gracefully, their work committed, the record written; when
// agents is set, the user is told so) and the
// second into a closed hurry channel (agents are killed at once). SIGPIPE
// is caught too, so that writing to a terminal or pipe that is gone fails
// the write instead of killing spawn before it saved the work.
func interrupts(errw io.Writer, agents *atomic.Bool) (context.Context, <-chan struct{}, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	hurry := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancel()
			if agents.Load() {
				fmt.Fprintf(errw, "\nspawn: %s; stopping the agent and saving its work (interrupt again to kill it at once)\n", signalName(sig))
			}
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
		signal.Stop(pipes)
		close(done)
		cancel()
	}
}

// signalName says what a signal means to the user.
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGHUP:
		return "hung up (SIGHUP)"
	case syscall.SIGTERM:
		return "terminated (SIGTERM)"
	}
	return "interrupted"
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

func newApp(d *deps, run func(context.Context, *deps, *runOptions) error, demo func(context.Context, *deps, *demoOptions) error) *cli.App {
	return &cli.App{
		Name:      "spawn",
		Usage:     "hand a coding task to an LLM coder in a git-worktree sandbox, have another LLM review it, record everything",
		Version:   version(),
		Reader:    d.io.In,
		Writer:    d.io.Out,
		ErrWriter: d.io.Err,
		// Errors are reported once, by Main.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
		// spawn --version prints what spawn version prints.
		HideVersion: true,
		Flags:       []cli.Flag{&cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print spawn's version"}},
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				fmt.Fprintln(d.io.Out, versionLine())
				return nil
			}
			if c.Args().Present() {
				return usageError{unknownCommand(c.App, c.Args().First())}
			}
			return cli.ShowAppHelp(c)
		},
		Commands: []*cli.Command{
			newRunCmd(d, run),
			newDemoCmd(d, demo),
			newLsCmd(d),
			newShowCmd(d),
			newLogsCmd(d),
			newDiffCmd(d),
			newPsCmd(d),
			newSendCmd(d),
			newStopCmd(d),
			newResumeCmd(d),
			newReplayCmd(d),
			newPRCmd(d),
			newCleanCmd(d),
			newDoctorCmd(d),
			newInitCmd(d),
			newCompletionCmd(d),
			newSchemaCmd(d),
			newActionCmd(d),
			newMCPCmd(d),
			{
				Name:  "version",
				Usage: "print spawn's version",
				Action: func(c *cli.Context) error {
					fmt.Fprintln(d.io.Out, versionLine())
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

// narration is the person's view of a run on stderr: notes and warnings
// always, what the agents do when agents is set (a terminal, a pipe or a
// CI log alike: a long run is never silent until its summary), and the
// live status line only on a terminal.
func (d *deps) narration(agents bool) *progressLine {
	return newProgressLine(d.io.Err, d.io.ErrTTY, agents)
}

// unknownCommand is the error for a word that names no command: the
// nearest command when one is close, else where the list is.
func unknownCommand(app *cli.App, word string) error {
	var names []string
	for _, c := range app.Commands {
		names = append(names, c.Names()...)
	}
	if near := nearest(word, names); near != "" {
		return fmt.Errorf("unknown command %q; did you mean spawn %s?", word, near)
	}
	return fmt.Errorf("unknown command %q; run spawn help for the list", word)
}

func exitIf(code int) error {
	if code != 0 {
		return exitCode(code)
	}
	return nil
}

// printJSON writes v as the one JSON document on stdout.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// isTerminal reports whether w is a file open on a terminal. It asks the
// terminal driver (term.IsTerminal), so a character device that is not a
// terminal, /dev/null among them, is not one.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
