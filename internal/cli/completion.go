package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// completeFlag is the completion command's hidden flag that turns it into
// the helper the shell scripts call on every Tab:
//
//	spawn completion --complete -- WORD... CURRENT
//
// WORD... are the words after "spawn" before the cursor and CURRENT the
// (possibly empty) word being completed. It prints the candidates that
// start with CURRENT, one a line, and nothing when the shell's own file
// completion fits (a flag's path value) or nothing fits. It never fails
// and never writes to stderr: a Tab must not print errors.
const completeFlag = "complete"

// idCommands take run ids as arguments; the value is how many (0: any).
var idCommands = map[string]int{"show": 1, "logs": 1, "diff": 1, "resume": 1, "send": 1, "clean": 0, "stop": 0}

// shells are the shells `spawn completion` writes scripts for. They are
// spawn's own rather than urfave/cli v2's EnableBashCompletion: v2 ships no
// script in its Go package (only files in its repository, whose bash one
// evals the words typed before Tab), its fish script is static (no run
// ids, no file fallback), and its default completer answers neither run
// ids nor --mode values and reads os.Args rather than the arguments Main
// is given.
var shells = map[string]string{"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion}

func newCompletionCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "bash | zsh | fish",
		Description: "Completes spawn's commands, their flags, and run ids for show, logs, diff, resume, send\n" +
			"and clean (read from the repository in the current directory, or --repo).\n\n" +
			"Example:\n" +
			"   source <(spawn completion bash)     # in ~/.bashrc\n" +
			"   source <(spawn completion zsh)      # in ~/.zshrc, after compinit\n" +
			"   spawn completion fish > ~/.config/fish/completions/spawn.fish",
		OnUsageError: onUsageError,
		// The words to complete may be "help": they are never a subcommand.
		HideHelpCommand: true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: completeFlag, Hidden: true, Usage: "print the candidates for the words after --"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool(completeFlag) {
				for _, w := range complete(c.Context, d, c.App, c.Args().Slice()) {
					fmt.Fprintln(d.io.Out, w)
				}
				return nil
			}
			return runCompletion(d, c.Args().Slice())
		},
	}
}

// runCompletion prints the script for the one shell args names.
func runCompletion(d *deps, args []string) error {
	if len(args) != 1 {
		return &fault.Error{Kind: fault.KindUsage, Msg: "name one shell: spawn completion bash, zsh or fish"}
	}
	script, ok := shells[args[0]]
	if !ok {
		return &fault.Error{Kind: fault.KindUsage, Msg: fmt.Sprintf("spawn has no completion for %q; name bash, zsh or fish", args[0])}
	}
	_, err := fmt.Fprint(d.io.Out, script)
	return err
}

// complete returns the candidates for the last of words (the word being
// completed) given the words before it.
func complete(ctx context.Context, d *deps, app *cli.App, words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	var cmd *cli.Command
	rest, unknown := before, false
	for i, w := range before {
		if !strings.HasPrefix(w, "-") {
			cmd, rest = findCommand(app, w), before[i+1:]
			unknown = cmd == nil
			break
		}
	}
	var cands []string
	switch {
	case unknown:
		// Not a command of spawn's: nothing fits.
	case cmd == nil && strings.HasPrefix(cur, "-"):
		cands = flagWords(app.VisibleFlags())
	case cmd == nil:
		for _, c := range app.VisibleCommands() {
			cands = append(cands, c.Name)
		}
	case strings.HasPrefix(cur, "-"):
		cands = flagWords(cmd.VisibleFlags())
	case len(rest) > 0 && takesValue(cmd, rest[len(rest)-1]):
		cands = flagValues(rest[len(rest)-1])
	default:
		cands = positionals(ctx, d, app, cmd, rest)
	}
	var out []string
	for _, c := range cands {
		if strings.HasPrefix(c, cur) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// findCommand is the command name names, nil when none.
func findCommand(app *cli.App, name string) *cli.Command {
	for _, c := range app.Commands {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// flagWords are flags as typed: --name, or -n for a one-letter name.
func flagWords(flags []cli.Flag) []string {
	var out []string
	for _, f := range flags {
		for _, n := range f.Names() {
			if len(n) == 1 {
				out = append(out, "-"+n)
			} else {
				out = append(out, "--"+n)
			}
		}
	}
	return out
}

// takesValue reports whether word is a flag of cmd that takes a value in
// the next word (not --flag=value, not a boolean).
func takesValue(cmd *cli.Command, word string) bool {
	name := strings.TrimLeft(word, "-")
	if !strings.HasPrefix(word, "-") || name == "" || strings.Contains(name, "=") {
		return false
	}
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			_, isBool := f.(*cli.BoolFlag)
			return !isBool
		}
	}
	return false
}

// flagValues are the values a flag takes, when they are a fixed set; nil
// leaves the value (a path, a duration) to the shell.
func flagValues(flag string) []string {
	if strings.TrimLeft(flag, "-") == "mode" {
		var modes []string
		for _, m := range observability.Modes() {
			modes = append(modes, string(m))
		}
		return modes
	}
	return nil
}

// positionals are the candidates for cmd's next argument, args being the
// words after the command name.
func positionals(ctx context.Context, d *deps, app *cli.App, cmd *cli.Command, args []string) []string {
	given, repo := 0, "."
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--repo" && i+1 < len(args):
			repo = args[i+1]
		case strings.HasPrefix(a, "--repo="):
			repo = strings.TrimPrefix(a, "--repo=")
		}
		switch {
		case takesValue(cmd, a):
			i++
		case !strings.HasPrefix(a, "-"):
			given++
		}
	}
	switch cmd.Name {
	case "help":
		if given > 0 {
			return nil
		}
		var names []string
		for _, c := range app.VisibleCommands() {
			names = append(names, c.Name)
		}
		return names
	case "completion":
		if given > 0 {
			return nil
		}
		return []string{"bash", "fish", "zsh"}
	}
	n, ok := idCommands[cmd.Name]
	if !ok || (n > 0 && given >= n) {
		return nil
	}
	return runIDs(ctx, d, repo)
}

// runIDs are the ids of the repository's runs, newest first, and "last";
// nil when there is no repository or registry to read.
func runIDs(ctx context.Context, d *deps, dir string) []string {
	repo, err := runs.OpenRepo(ctx, dir, d.env)
	if err != nil {
		return nil
	}
	entries, err := repo.Registry.List()
	if err != nil || len(entries) == 0 {
		return nil
	}
	ids := make([]string, 0, len(entries)+1)
	for _, e := range entries {
		ids = append(ids, e.ID)
	}
	return append(ids, runs.Last)
}

// The scripts call the helper with the words before the cursor and the
// current one; an empty answer falls back to the shell's file completion.

const bashCompletion = `# bash completion for spawn
# Load it in this shell, or from ~/.bashrc:  source <(spawn completion bash)
_spawn() {
    local IFS=$'\n'
    local words=("${COMP_WORDS[@]:1:COMP_CWORD}")
    COMPREPLY=($(spawn completion --complete -- "${words[@]}" 2>/dev/null))
}
complete -o default -F _spawn spawn
`

const zshCompletion = `#compdef spawn
# zsh completion for spawn
# Load it from ~/.zshrc, after compinit:  source <(spawn completion zsh)
_spawn() {
  local -a candidates
  candidates=("${(@f)$(spawn completion --complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  candidates=(${candidates:#})
  if (( ${#candidates} )); then
    compadd -a candidates
  else
    _files
  fi
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _spawn "$@"
else
  compdef _spawn spawn
fi
`

const fishCompletion = `# fish completion for spawn
# Install it:  spawn completion fish > ~/.config/fish/completions/spawn.fish
function __spawn_complete
    set -l words (commandline -opc) (commandline -ct)
    set -l candidates (spawn completion --complete -- $words[2..-1] 2>/dev/null)
    if test (count $candidates) -gt 0
        printf '%s\n' $candidates
    else
        __fish_complete_path (commandline -ct)
    end
end
complete -c spawn -f -a '(__spawn_complete)'
`
