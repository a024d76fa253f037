package observability

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Encode returns the record as indented JSON with secrets redacted.
func Encode(rec *Record, red *Redactor) ([]byte, error) {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return append(red.Bytes(b), '\n'), nil
}

// WriteFile writes the record to path atomically: a temporary file in the
// same directory, synced, then renamed over path. A reader never sees a
// half-written record. The error is the file system's (it names the file).
func WriteFile(path string, rec *Record, red *Redactor) error {
	b, err := Encode(rec, red)
	if err != nil {
		return err
	}
	return WriteEncoded(path, b)
}

// WriteEncoded is WriteFile of a record Encode made.
func WriteEncoded(path string, b []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".record-*.json")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if rerr := os.Remove(tmp.Name()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = errors.Join(err, rerr)
			}
		}
	}()
	if _, err = tmp.Write(b); err != nil {
		return errors.Join(err, tmp.Close())
	}
	if err = tmp.Sync(); err != nil {
		return errors.Join(err, tmp.Close())
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
