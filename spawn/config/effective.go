package config

import (
	"encoding/json"
	"fmt"
)

// Encode is c as a run directory keeps it (config.json): JSON of every
// value, for spawn replay to run the same configuration again. It holds
// no secret of spawn's own (a configuration names none); the caller
// redacts it like everything it writes.
func Encode(c Config) ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the configuration: %w", err)
	}
	return append(b, '\n'), nil
}

// Decode reads a configuration Encode wrote and validates it.
func Decode(b []byte) (Config, error) {
	c := Default()
	c.Runners = Runners{}
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("read the configuration: %w", err)
	}
	if len(c.Runners) == 0 {
		c.Runners = defaultRunners()
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}
