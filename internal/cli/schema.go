package cli

import (
	"context"
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// schemaOptions is `spawn schema` after flag parsing.
type schemaOptions struct {
	Events bool // the schema of one event instead of the record's
}

func newSchemaCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:  "schema",
		Usage: "print the JSON Schema of the record (what --json prints) or of an event (--progress=json)",
		Description: "Prints a JSON Schema (draft 2020-12): by default the record's, the document\n" +
			"spawn run --json, spawn resume --json and spawn show --json print and record.json holds;\n" +
			"with --events, one event's: a line of events.ndjson and of --progress=json on stderr.\n" +
			"The record schema's description documents the exit codes and error kinds.\n\n" +
			"Example:\n   spawn schema > record.schema.json\n   spawn schema --events > events.schema.json",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "events", Usage: "print the schema of one event (events.ndjson, --progress=json); it refers to the record schema by its $id"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{errors.New("spawn schema takes no arguments; use --events for the event schema")}
			}
			return runSchema(c.Context, d, &schemaOptions{Events: c.Bool("events")})
		},
	}
}

// runSchema prints the schema, byte for byte as shipped in observability.
func runSchema(_ context.Context, d *deps, opts *schemaOptions) error {
	b := observability.RecordSchema()
	if opts.Events {
		b = observability.EventsSchema()
	}
	_, err := d.io.Out.Write(b)
	return err
}
