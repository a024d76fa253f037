package isolation

import (
	"strings"

	"github.com/infinite-improbability-drive/spawn/observability"
)

// secretWords mark a variable as a credential beyond observability's rule
// (KEY, TOKEN, SECRET, PASSWORD).
var secretWords = []string{"CREDENTIAL", "AUTH", "PASSWD", "COOKIE", "PRIVATE", "SESSION"}

// credentialVars are variables that hold no secret by name but hand one
// over: an agent socket, a helper that answers with a password, a file of
// credentials, a cloud or registry config.
var credentialVars = map[string]bool{
	"SSH_AUTH_SOCK": true, "GPG_AGENT_INFO": true, "GIT_ASKPASS": true, "SSH_ASKPASS": true,
	"SUDO_ASKPASS": true, "NETRC": true, "DOCKER_CONFIG": true, "KUBECONFIG": true,
	"DBUS_SESSION_BUS_ADDRESS": true, "XAUTHORITY": true, "GH_HOST": true, "GH_ENTERPRISE_HOST": true,
}

// agentOwned are variables spawn decides for every agent (its homes and
// caches): the user's values are dropped, never passed through. So is
// each variable an agent's CLI is given (its config home, its API base:
// AgentEnv's set), whichever CLI it is.
var agentOwned = []string{
	"HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "GOCACHE",
}

// IsCredential reports whether the variable name holds or hands over a
// credential: observability.IsSecretName, the words of secretWords, cloud
// credential prefixes (AWS_, AZURE_, GOOGLE_APPLICATION_CREDENTIALS) and
// the variables of credentialVars.
func IsCredential(name string) bool {
	n := strings.ToUpper(name)
	if observability.IsSecretName(n) || credentialVars[n] {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	for _, p := range []string{"AWS_", "AZURE_", "GOOGLE_APPLICATION_CREDENTIALS", "GCLOUD_", "CLOUDSDK_"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// AgentEnv is the environment an agent gets: env without any credential
// (IsCredential), without the variables spawn decides for agents
// (agentOwned) and without any set sets, plus set (KEY=VALUE pairs: the
// private homes, the relay's base URLs and throwaway key).
func AgentEnv(env []string, set ...string) []string {
	owned := map[string]bool{}
	for _, k := range agentOwned {
		owned[k] = true
	}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		owned[k] = true
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || IsCredential(k) || owned[k] {
			continue
		}
		out = append(out, kv)
	}
	return append(out, set...)
}
