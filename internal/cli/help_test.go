package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every command a user can see answers --help with what it does and an
// example to copy.
func TestEveryCommandHasHelpWithAnExample(t *testing.T) {
	d := &deps{io: IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}}
	app := newApp(d, runRun, runDemo)
	for _, c := range app.Commands {
		if c.Hidden || c.Name == "help" || c.Name == "version" {
			continue
		}
		var out, errw bytes.Buffer
		code := Main([]string{"spawn", c.Name, "--help"}, nil, strings.NewReader(""), &out, &errw)
		assert.Equal(t, 0, code, "spawn %s --help: %s", c.Name, errw.String())
		assert.Contains(t, out.String(), "USAGE:", "spawn %s --help", c.Name)
		assert.Regexp(t, `(?s)Example:.*spawn `+c.Name+`\b`, out.String(), "spawn %s --help shows an example", c.Name)
	}
}
