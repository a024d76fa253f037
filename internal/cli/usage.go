package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
	"github.com/infinite-improbability-drive/spawn/internal/suggest"
)

var (
	flagValueRE   = lazy.MustCompile(`^invalid value "(.*)" for flag -+(\S+): `)
	flagMissingRE = lazy.MustCompile(`^flag needs an argument: -+(\S+)$`)
	flagUnknownRE = lazy.MustCompile(`^flag provided but not defined: -+(\S+)$`)
)

// onUsageError turns the flag parser's message into one sentence that
// names the flag and says how to fix it.
func onUsageError(c *cli.Context, err error, _ bool) error {
	var flags []cli.Flag
	cmd := "spawn"
	if c != nil && c.Command != nil && c.Command.Name != "" {
		flags, cmd = c.Command.Flags, "spawn "+c.Command.Name
	} else if c != nil && c.App != nil {
		flags = c.App.Flags
	}
	msg := err.Error()
	if m := flagValueRE.FindStringSubmatch(msg); m != nil {
		value, name := m[1], m[2]
		if _, isDuration := findFlag(flags, name).(*cli.DurationFlag); isDuration {
			if _, numErr := strconv.ParseFloat(value, 64); numErr == nil {
				return usageError{fmt.Errorf("--%s %s: a duration needs a unit; write %sm for minutes or %ss for seconds", name, value, value, value)}
			}
			return usageError{fmt.Errorf("--%s %s is not a duration; write it like 90s, 5m or 1h30m", name, value)}
		}
		return usageError{fmt.Errorf("--%s %s is not a valid value; see %s --help", name, value, cmd)}
	}
	if m := flagMissingRE.FindStringSubmatch(msg); m != nil {
		return usageError{missingValue(findFlag(flags, m[1]), m[1])}
	}
	if m := flagUnknownRE.FindStringSubmatch(msg); m != nil {
		if near := nearestFlag(m[1], flags); near != "" {
			return usageError{fmt.Errorf("%s has no flag %s; did you mean %s?", cmd, dashed(m[1]), dashed(near))}
		}
		return usageError{fmt.Errorf("%s has no flag %s; see %s --help for its flags", cmd, dashed(m[1]), cmd)}
	}
	return usageError{err}
}

// missingValue is the error for a flag given without its value, saying
// what the value is.
func missingValue(f cli.Flag, name string) error {
	usage := ""
	if d, ok := f.(cli.DocGenerationFlag); ok {
		usage = d.GetUsage()
	}
	if usage == "" {
		return fmt.Errorf("--%s needs a value", name)
	}
	return fmt.Errorf("--%s needs a value: %s", name, usage)
}

// danglingValue is the usage error for a flag that takes a value and was
// given as the last word ("spawn run fix it --mode"), which reorderArgs
// leaves with the value "--"; nil when there is none.
func danglingValue(c *cli.Context) error {
	for _, f := range c.Command.Flags {
		if _, ok := f.(*cli.StringFlag); !ok {
			continue
		}
		name := f.Names()[0]
		if c.IsSet(name) && c.String(name) == "--" {
			return usageError{missingValue(f, name)}
		}
	}
	return nil
}

// nearestFlag is the flag the user most likely meant by word: for one
// letter, the one-letter alias in the other case (-F for -f); for a longer
// word, the nearest long name. "" when none is close.
func nearestFlag(word string, flags []cli.Flag) string {
	var short, long []string
	for _, f := range flags {
		for _, n := range f.Names() {
			if len([]rune(n)) == 1 {
				short = append(short, n)
			} else {
				long = append(long, n)
			}
		}
	}
	if len([]rune(word)) == 1 {
		for _, n := range short {
			if strings.EqualFold(n, word) {
				return n
			}
		}
		return ""
	}
	return nearest(word, long)
}

// dashed is a flag's name as a user types it: -f, --follow.
func dashed(name string) string {
	if len([]rune(name)) == 1 {
		return "-" + name
	}
	return "--" + name
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// nearest is the candidate closest to word, "" when none is close enough
// to be what was meant.
func nearest(word string, candidates []string) string {
	limit := 3
	if len(word) <= 3 {
		limit = 2
	}
	return suggest.Nearest(word, candidates, limit)
}
