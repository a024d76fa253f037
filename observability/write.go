package observability

import (
	"encoding/json"
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
// half-written record.
func WriteFile(path string, rec *Record, red *Redactor) (err error) {
	b, err := Encode(rec, red)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".record-*.json")
	if err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(b); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write record: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write record: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	return nil
}
