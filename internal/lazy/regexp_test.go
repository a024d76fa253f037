package lazy

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestARegexpIsCompiledOnceOnFirstUseAndMatchesAsRegexpDoes(t *testing.T) {
	r := MustCompile(`(?i)\bshould i\b`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.True(t, r.MatchString("Should I go on?"))
		}()
	}
	wg.Wait()
	assert.Same(t, r.Regexp(), r.Regexp())
	assert.Equal(t, []string{"a", "b"}, MustCompile(`,\s*`).Split("a, b", -1))
	assert.Equal(t, "x-y", MustCompile(`_`).ReplaceAllString("x_y", "-"))
}

func TestABadPatternPanicsOnFirstUseNotBefore(t *testing.T) {
	r := MustCompile(`(`)
	assert.Panics(t, func() { r.MatchString("") })
}
