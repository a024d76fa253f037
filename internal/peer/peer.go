// Package peer says what the other end of a connection did: whether it
// hung up (Closed).
package peer
