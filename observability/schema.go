package observability

import (
	"bytes"
	_ "embed"
)

// The JSON Schemas (draft 2020-12) of spawn's two documents. They are the
// contract with hosts and CI: a key of Record, or of an event, that is not
// in its schema fails the schema tests.
var (
	//go:embed record.schema.json
	recordSchema []byte
	//go:embed events.schema.json
	eventsSchema []byte
)

// RecordSchemaURL and EventsSchemaURL are the schemas' $id: the events
// schema refers to the record schema's definitions by it.
const (
	RecordSchemaURL = "https://github.com/infinite-improbability-drive/spawn/observability/record.schema.json"
	EventsSchemaURL = "https://github.com/infinite-improbability-drive/spawn/observability/events.schema.json"
)

// RecordSchema returns the JSON Schema of the record (record.json, and the
// document `--json` prints). The slice is new on every call.
func RecordSchema() []byte { return bytes.Clone(recordSchema) }

// EventsSchema returns the JSON Schema of one event (a line of
// events.ndjson and of `--progress=json`). It refers to RecordSchema's
// definitions by RecordSchemaURL. The slice is new on every call.
func EventsSchema() []byte { return bytes.Clone(eventsSchema) }
