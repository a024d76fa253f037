package watcher

import (
	"io"
	"strings"
	"testing"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// BenchmarkTranscriptHugeLine writes an 8 MiB stream-json line (a large tool
// result) through the transcript tee in 32 KiB reads, as the watcher does.
func BenchmarkTranscriptHugeLine(b *testing.B) {
	line := []byte(`{"type":"user","content":"` + strings.Repeat("x", 8<<20) + `"}` + "\n")
	red := observability.NewRedactor([]string{"X_TOKEN=secret-value-123"})
	b.SetBytes(int64(len(line)))
	for range b.N {
		tee := &lineTee{w: io.Discard, red: red}
		for chunk := range slicesOf(line, 32<<10) {
			_, _ = tee.Write(chunk)
		}
		tee.flush()
	}
}

func slicesOf(b []byte, n int) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			k := min(n, len(b))
			if !yield(b[:k]) {
				return
			}
			b = b[k:]
		}
	}
}
