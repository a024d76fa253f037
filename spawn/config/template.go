package config

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Template is a spawn-team.toml that sets every key to its built-in
// default, each with a comment saying what it does: what `spawn init`
// writes. It loads to exactly Default(), and it is the same text as the
// spawn-team.toml at the top of spawn's own repository (the tests hold
// both to that).
//
//go:embed spawn-team.toml
var Template string

// ErrExists is returned by WriteTemplate when the directory already has a
// spawn-team.toml.
var ErrExists = errors.New("a spawn-team.toml already exists")

// WriteTemplate writes Template to dir/spawn-team.toml and returns the
// path. It never overwrites: when the file exists (whatever it holds) it
// fails with an error matching ErrExists and leaves it as it was.
func WriteTemplate(dir string) (path string, err error) {
	path = filepath.Join(dir, File)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return path, fmt.Errorf("%s: %w", path, ErrExists)
	}
	if err != nil {
		return path, fmt.Errorf("create %s: %w", path, err)
	}
	_, err = f.WriteString(Template)
	if err = errors.Join(err, f.Close()); err != nil {
		return path, errors.Join(fmt.Errorf("write %s: %w", path, err), os.Remove(path))
	}
	return path, nil
}
