package config

import (
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
)

// Environment is what the environment says to spawn itself, read once by
// ReadEnvironment and handed down as values: the user's directories, the
// Go toolchain's caches, where GitHub is and who spawn is there, and the
// variables the model providers name (their base URLs and credentials).
// A variable that is not set reads as "". The environment a child process
// gets is still built from the whole []string it came from; Environment
// is only what spawn interprets.
type Environment struct {
	Home       string // HOME
	TmpDir     string // TMPDIR
	ConfigHome string // XDG_CONFIG_HOME
	CacheHome  string // XDG_CACHE_HOME
	SpawnCache string // SPAWN_CACHE_DIR: where spawn keeps the toolchain caches
	GoModCache string // GOMODCACHE
	GoPath     string // GOPATH
	GitHub     GitHubEnv
	// Providers are the values of the variables each provider of the
	// registry names (runners.Provider BaseVar and CredentialVars), the
	// set ones only.
	Providers runners.Values
	// Secrets are the values of the variables whose names say they hold a
	// secret (observability.SecretValues), for the redactor of everything
	// spawn writes.
	Secrets []string
}

// GitHubEnv is what the environment says about GitHub, as read (untrimmed,
// except the token): the fields and their types are those of the GitHub
// side's own (team/github.Given), so one converts to the other.
type GitHubEnv struct {
	Repository string // GITHUB_REPOSITORY: owner/repo, overriding the remote
	APIURL     string // GITHUB_API_URL: the REST base
	GraphQLURL string // GITHUB_GRAPHQL_URL: the GraphQL endpoint
	// Token is the first of GitHubTokenVars set to more than blanks,
	// trimmed, and TokenSource its name; both "" when none is.
	Token       string
	TokenSource string
	// ReviewerToken is SPAWN_GITHUB_REVIEWER_TOKEN: a second identity that
	// submits reviews.
	ReviewerToken string
}

// GitHubTokenVars are the variables a GitHub token is taken from, first
// set first (then `gh auth token`, which is for the GitHub side to ask).
var GitHubTokenVars = []string{"SPAWN_GITHUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN"}

// ReadEnvironment reads env (KEY=VALUE pairs as Cmd.Env holds them; the
// last setting of a name wins) once, for every variable spawn interprets.
func ReadEnvironment(env []string) Environment {
	get := func(name string) string { return proc.Getenv(env, name) }
	e := Environment{
		Home: get("HOME"), TmpDir: get("TMPDIR"),
		ConfigHome: get("XDG_CONFIG_HOME"), CacheHome: get("XDG_CACHE_HOME"), SpawnCache: get("SPAWN_CACHE_DIR"),
		GoModCache: get("GOMODCACHE"), GoPath: get("GOPATH"),
		GitHub: GitHubEnv{Repository: get("GITHUB_REPOSITORY"), APIURL: get("GITHUB_API_URL"), GraphQLURL: get("GITHUB_GRAPHQL_URL"),
			ReviewerToken: get("SPAWN_GITHUB_REVIEWER_TOKEN")},
		Providers: runners.Values{}, Secrets: observability.SecretValues(env),
	}
	for _, name := range GitHubTokenVars {
		if v := strings.TrimSpace(get(name)); v != "" {
			e.GitHub.Token, e.GitHub.TokenSource = v, name
			break
		}
	}
	for _, a := range runners.NewRegistry().Adapters() {
		p := a.Provider()
		for _, name := range append([]string{p.BaseVar}, p.CredentialVars...) {
			if v, ok := proc.LookupEnv(env, name); ok {
				e.Providers[name] = v
			}
		}
	}
	return e
}

// Dirs are the user's directories isolation keeps the toolchain caches
// under.
func (e Environment) Dirs() isolation.Dirs {
	return isolation.Dirs{Home: e.Home, CacheHome: e.CacheHome, SpawnCache: e.SpawnCache}
}
