package config

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/infinite-improbability-drive/spawn/runners"
)

// What the environment says is read once, as a child would see it (the
// last setting of a name wins): the user's folders, GitHub's place and
// token, each provider's variables, the set ones only, and the value of
// every variable named as a secret, for the redactor.
func TestReadEnvironmentReadsWhatSpawnInterprets(t *testing.T) {
	e := ReadEnvironment([]string{
		"HOME=/old", "HOME=/home/u", "TMPDIR=/var/tmp", "XDG_CONFIG_HOME=/cfg", "XDG_CACHE_HOME=/cache",
		"SPAWN_CACHE_DIR=/spawn-cache", "GOMODCACHE=/mod", "GOPATH=/gopath",
		"GITHUB_REPOSITORY=acme/app", "GITHUB_API_URL=https://ghe.corp/api/v3/ ", "GITHUB_GRAPHQL_URL=https://ghe.corp/api/graphql",
		"SPAWN_GITHUB_TOKEN=  ", "GITHUB_TOKEN= ghs_second ", "GH_TOKEN=ghs_third", "SPAWN_GITHUB_REVIEWER_TOKEN=ghs_reviewer",
		"ANTHROPIC_BASE_URL=http://gateway.corp", "ANTHROPIC_API_KEY=", "GEMINI_API_KEY=gem-key", "UNRELATED=x",
	})
	assert.Equal(t, Environment{
		Home: "/home/u", TmpDir: "/var/tmp", ConfigHome: "/cfg", CacheHome: "/cache", SpawnCache: "/spawn-cache",
		GoModCache: "/mod", GoPath: "/gopath",
		GitHub: GitHubEnv{Repository: "acme/app", APIURL: "https://ghe.corp/api/v3/ ", GraphQLURL: "https://ghe.corp/api/graphql",
			Token: "ghs_second", TokenSource: "GITHUB_TOKEN", ReviewerToken: "ghs_reviewer"},
		Providers: runners.Values{"ANTHROPIC_BASE_URL": "http://gateway.corp", "ANTHROPIC_API_KEY": "", "GEMINI_API_KEY": "gem-key", "HOME": "/home/u"},
		Secrets:   []string{"  ", " ghs_second ", "ghs_third", "ghs_reviewer", "", "gem-key"},
	}, e, "a blank SPAWN_GITHUB_TOKEN gives way to GITHUB_TOKEN; UNRELATED is no provider's")

	none := ReadEnvironment(nil)
	assert.Empty(t, none.GitHub.Token+none.GitHub.TokenSource+none.Home+none.TmpDir)
	assert.Empty(t, none.Providers)
}

// Every variable a provider's credential reads is collected, so the
// credential found from the environment is the one the provider finds.
func TestReadEnvironmentHoldsEveryProvidersVariables(t *testing.T) {
	for _, a := range runners.NewRegistry().Adapters() {
		p := a.Provider()
		for _, name := range append([]string{p.BaseVar}, p.CredentialVars...) {
			e := ReadEnvironment([]string{name + "=value-of-" + name})
			assert.Equal(t, "value-of-"+name, e.Providers.Get(name), "%s's %s", a.Name(), name)
		}
		key := p.CredentialVars[0]
		assert.NotNil(t, p.Credential(ReadEnvironment([]string{key + "=user-key-0123456789"}).Providers), "%s's credential from %s", a.Name(), key)
	}
}
