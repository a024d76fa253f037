package proc

import "strings"

// LookupEnv finds name in env, a child's whole environment as Cmd.Env
// holds it; the last setting wins, as when the child starts.
func LookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// Getenv is LookupEnv's value, "" when name is not set.
func Getenv(env []string, name string) string {
	v, _ := LookupEnv(env, name)
	return v
}
