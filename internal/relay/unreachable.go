package relay

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"syscall"
)

// UnreachablePrefix starts the body of the relay's 502 answer when the
// upstream API could not be reached at all (DNS, a refused connection, TLS,
// a proxy, a timeout while connecting): "spawn relay: unreachable: <host>:
// <cause>". The CLIs quote the body in their error text, where spawn finds
// it. Any other upstream failure answers "spawn relay: upstream failed: ...".
const UnreachablePrefix = "spawn relay: unreachable: "

// upstreamError is the body of the relay's answer when the request to host
// failed with err: the unreachable form, naming host and the cause in a few
// words, when no connection could be made.
func upstreamError(host string, err error) string {
	if cause := UnreachableCause(err); cause != "" {
		return UnreachablePrefix + host + ": " + cause
	}
	return "spawn relay: upstream failed: " + err.Error()
}

// UnreachableCause says in a few words why no connection to an HTTP
// server could be made (err from an http.Client or a reverse proxy): a DNS
// lookup that failed, a refused connection, an unreachable network, a TLS
// handshake or certificate that failed, a proxy that failed, a connect
// timeout. It is "" when err is not such a failure (the server was
// reached).
func UnreachableCause(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	var cert *tls.CertificateVerificationError
	var rec tls.RecordHeaderError
	switch {
	case errors.As(err, &dns):
		why := dns.Err
		if dns.IsNotFound {
			why = "no such host"
		}
		return fmt.Sprintf("the DNS lookup of %s failed (%s)", dns.Name, why)
	case errors.As(err, &op) && op.Op == "proxyconnect":
		return fmt.Sprintf("the proxy %s failed (%v)", op.Addr, op.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the connection was refused"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "the network is unreachable"
	case errors.As(err, &cert):
		return fmt.Sprintf("its TLS certificate was not accepted (%v)", cert.Err)
	case errors.As(err, &rec):
		return "the TLS handshake failed (the server does not speak TLS)"
	case errors.As(err, &op) && op.Op == "dial" && op.Timeout():
		return "connecting timed out"
	case errors.As(err, &op) && op.Op == "remote error":
		return fmt.Sprintf("the TLS handshake failed (%v)", op.Err)
	}
	return ""
}
