package githubfake_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/infinite-improbability-drive/spawn/internal/githubfake"
)

// A classic token's responses name its scopes in X-OAuth-Scopes, as
// GitHub's do; a fine-grained token's carry no such header.
func TestClassicTokensScopesAreInEveryResponse(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.srv.AddUser("dave", "dave-classic", githubfake.PermissionWrite, githubfake.Scopes("repo", "workflow")))
	require.NoError(t, f.srv.AddUser("erin", "erin-classic", githubfake.PermissionWrite, githubfake.Scopes()))

	r := f.do(t, "dave-classic", "GET", "/rate_limit", nil)
	require.Equal(t, 200, r.status)
	assert.Equal(t, []string{"repo, workflow"}, r.header.Values("X-OAuth-Scopes"))
	r = f.do(t, "dave-classic", "GET", "/repos/"+owner+"/"+repoName, nil)
	require.Equal(t, 200, r.status)
	assert.Equal(t, "repo, workflow", r.header.Get("X-OAuth-Scopes"))

	r = f.do(t, "erin-classic", "GET", "/rate_limit", nil)
	assert.Equal(t, []string{""}, r.header.Values("X-OAuth-Scopes"), "a classic token without scopes says so")

	for _, token := range []string{aliceToken, botToken, "", "no-such-token"} {
		r = f.do(t, token, "GET", "/rate_limit", nil)
		assert.Empty(t, r.header.Values("X-OAuth-Scopes"), "token %q", token)
	}
}
