// Package shell is what spawn writes for a POSIX shell to read.
package shell

import "strings"

// Quote quotes s for a POSIX shell: in single quotes, where each single
// quote of s closes the quoting, is escaped, and reopens it.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
