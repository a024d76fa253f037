package spawn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/relay"
)

// reachWait bounds how long doctor waits for a model API to answer.
const reachWait = 10 * time.Second

// checkReach is doctor's line for one model API a run will use: the base
// URL the relay would forward to (set, the value of the variable baseVar,
// else def) answers HTTP. It sends
// one GET of the base URL without any credential, so no model is called and
// nothing is spent; any HTTP answer (a 404 too) proves that DNS, the
// connection, TLS and the proxy (HTTPS_PROXY) work.
func checkReach(ctx context.Context, name, baseVar, def, set string) Check {
	base := set
	if base == "" {
		base = def
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return Check{Name: name, Detail: fmt.Sprintf("%s=%q is not a URL; fix it, or unset it for %s", baseVar, base, def)}
	}
	ctx, cancel := context.WithTimeout(ctx, reachWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base, nil)
	if err != nil {
		return Check{Name: name, Detail: fmt.Sprintf("%s=%q is not a URL; fix it, or unset it for %s", baseVar, base, def)}
	}
	req.Header.Set("User-Agent", "spawn doctor")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Check{Name: name, Detail: fmt.Sprintf("cannot reach %s: %s; check the network, the proxy (HTTPS_PROXY) and %s", base, unreachableCause(err), baseVar)}
	}
	if err := resp.Body.Close(); err != nil {
		return Check{Name: name, Detail: fmt.Sprintf("cannot read the answer of %s (%v); check the network", base, err)}
	}
	return Check{Name: name, OK: true, Detail: fmt.Sprintf("%s answers (HTTP %d to a request without credentials: no model was called)", base, resp.StatusCode)}
}

// unreachableCause says in a few words why a request reached no server.
func unreachableCause(err error) string {
	if cause := relay.UnreachableCause(err); cause != "" {
		return cause
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", reachWait)
	}
	return err.Error()
}
