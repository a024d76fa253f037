// Package github is spawn's client of GitHub: where the repository is and
// who spawn acts as (Locate), whether it may act there (Preflight), and
// the calls GitHub mode and `spawn pr` make: pull requests, reviews whose
// inline comments are placed on the diff before they are posted, review
// threads (read over GraphQL, replied to over REST, resolved over
// GraphQL), commit statuses, and pushing with the git CLI.
//
// Three properties hold for every call.
//
// Never twice. Every body spawn posts carries a hidden Marker. A call that
// creates something (a pull request, a review, a reply) first looks for
// what it would create, and after an answer that leaves the effect unknown
// (a 5xx, a timeout, a dropped connection) looks again before it tries
// again, so a retry never posts twice.
//
// Never stuck. Writes are serialised and spaced (WithMinWriteInterval).
// Rate limits are waited out as GitHub asks (retry-after, else
// x-ratelimit-reset, else a back-off from a minute), 5xx answers to calls
// that may be repeated are retried a bounded number of times, and every
// wait is bounded by the caller's context and reported (WithWaitReporter).
// A wait that would outlast the context's deadline fails at once.
//
// Never leaked. Tokens are Token values, which print as [redacted]; no
// error, result or report of this package holds a token's text.
//
// Failures are typed: *PreflightError (the caller's exit 2: nothing was
// created), *APIError (GitHub refused or kept failing; it carries GitHub's
// message), *PushError, and ErrCannotResolve, which is not a failure.
package github
