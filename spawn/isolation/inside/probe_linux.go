package inside

import (
	"os"
	"strconv"
)

// processEnviron is the environment process pid was executed with, as
// /proc shows it to a process allowed to see it.
func processEnviron(pid int) ([]byte, error) {
	return os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
}
