package text

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWords(t *testing.T) {
	assert.Equal(t, "1 commit", Plural(1, "commit"))
	assert.Equal(t, "0 findings", Plural(0, "finding"))
	assert.Equal(t, "0123456789ab", ShortSHA("0123456789abcdef"))
	assert.Equal(t, "abc", ShortSHA("abc"))
	assert.Equal(t, "first", FirstLine("  first\nsecond"))
	long := FirstLine(strings.Repeat("é", 80))
	assert.Equal(t, strings.Repeat("é", 69)+"...", long)
}
