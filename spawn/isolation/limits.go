package isolation

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// Limits bound one agent's process tree: the agent CLI and everything it
// starts (its tools, a test suite, a fork bomb).
type Limits struct {
	// Processes is the most processes (and threads) the tree may hold at
	// once; 0 is no limit.
	Processes int
	// Memory is the most memory the tree may use, in bytes; 0 is no
	// limit.
	Memory int64
	// Disk is the most of its filesystems' free space one agent process
	// may take (what it writes, in its worktree and its private
	// directory), in bytes; 0 is no limit.
	Disk int64
}

// Enforcement names how a Cage holds its Limits.
type Enforcement string

// How limits are enforced, from the strongest to the weakest.
const (
	// EnforcedCgroup2 is a cgroup v2 of the agent's own (pids.max, memory.max).
	EnforcedCgroup2 Enforcement = "cgroup v2"
	// EnforcedCgroup1 is a cgroup of the agent's own in cgroup v1's pids
	// and memory hierarchies.
	EnforcedCgroup1 Enforcement = "cgroup v1"
	// EnforcedRlimit is resource limits the agent's reaper sets
	// (RLIMIT_NPROC for the processes, which the kernel does not apply to
	// root; RLIMIT_DATA for each process's memory).
	EnforcedRlimit Enforcement = "rlimit"
)

// Exceeded is a limit an agent's tree reached.
type Exceeded string

// The limits a Cage reports as reached.
const (
	ExceededProcesses Exceeded = "max_processes"
	ExceededMemory    Exceeded = "max_memory"
	ExceededDisk      Exceeded = "max_disk"
)

// Cage holds one agent's process tree to Limits: in a cgroup of its own
// when spawn can make one here (Linux's cgroup v2, or v1's pids and memory
// hierarchies: as root, or in a delegated cgroup), else with resource
// limits its reaper sets (always on Darwin, which has no cgroups). The disk is watched (Check): its filesystems'
// free space at the start of each agent process is the mark. A Cage is
// used by one agent session at a time; Close removes its cgroups.
type Cage struct {
	limits Limits
	how    Enforcement
	pids   string   // the cgroup with the pids controller, "" with rlimits
	memory string   // the cgroup with the memory controller, "" with rlimits
	made   []string // cgroups Close removes
	disk   []string // paths whose filesystems are watched

	// marks at the start of the current process: counters, free space.
	pidsMax  int64
	oomKills int64
	free     map[uint64]uint64 // filesystem id -> free bytes
	paths    map[uint64]string
}

// NewCage makes a cage named name (unique among the run's agents) for
// limits, watching the filesystems of disk. It never fails for want of
// cgroups: it falls back to rlimits, and Enforced says which it got.
func NewCage(name string, limits Limits, disk []string) *Cage {
	c := &Cage{limits: limits, how: EnforcedRlimit, disk: disk}
	if limits.Processes <= 0 && limits.Memory <= 0 {
		return c
	}
	if !c.cgroups(name) {
		c.how = EnforcedRlimit
	}
	return c
}

// Enforced says how the cage holds its limits.
func (c *Cage) Enforced() Enforcement { return c.how }

// Limits are the cage's limits.
func (c *Cage) Limits() Limits { return c.limits }

// Proc is what the agent's reaper does before it starts the agent: join
// the cage's cgroups, or set its resource limits.
func (c *Cage) Proc() *proc.Cage {
	var p proc.Cage
	for _, d := range []string{c.pids, c.memory} {
		if d != "" && !containsString(p.Cgroups, d) {
			p.Cgroups = append(p.Cgroups, d)
		}
	}
	if c.how == EnforcedRlimit {
		if c.limits.Processes > 0 {
			// RLIMIT_NPROC counts every process of the user: the cage's
			// share comes on top of what the user runs already.
			p.Rlimits = append(p.Rlimits, proc.Rlimit{Resource: rlimitNproc, Limit: uint64(userProcesses() + c.limits.Processes)})
		}
		if c.limits.Memory > 0 {
			p.Rlimits = append(p.Rlimits, proc.Rlimit{Resource: syscall.RLIMIT_DATA, Limit: uint64(c.limits.Memory)})
		}
	}
	if len(p.Cgroups) == 0 && len(p.Rlimits) == 0 {
		return nil
	}
	return &p
}

// Mark takes the marks an agent process is measured from: call it as the
// process starts.
func (c *Cage) Mark() {
	c.pidsMax, c.oomKills = c.counters()
	c.free, c.paths = map[uint64]uint64{}, map[uint64]string{}
	for _, p := range c.disk {
		if id, free, ok := freeSpace(p); ok {
			if _, seen := c.free[id]; !seen {
				c.free[id], c.paths[id] = free, p
			}
		}
	}
}

// Check reports the first limit the tree reached since Mark, with what
// says so; "" when none. It is cheap: a few small files and statfs.
func (c *Cage) Check() (Exceeded, string) {
	pidsMax, oom := c.counters()
	if pidsMax > c.pidsMax {
		return ExceededProcesses, fmt.Sprintf("it tried to run more than %d processes at once", c.limits.Processes)
	}
	if oom > c.oomKills {
		return ExceededMemory, fmt.Sprintf("it used all of its %s of memory and a process was killed", Size(c.limits.Memory))
	}
	if c.limits.Disk > 0 {
		for id, before := range c.free {
			if _, now, ok := freeSpace(c.paths[id]); ok && before > now && int64(before-now) > c.limits.Disk {
				return ExceededDisk, fmt.Sprintf("it wrote more than %s to the filesystem of %s", Size(c.limits.Disk), c.paths[id])
			}
		}
	}
	return "", ""
}

// counters reads how often the cgroups refused a process (pids.events
// max) and killed one for memory (oom_kill).
func (c *Cage) counters() (pidsMax, oomKills int64) {
	if c.pids != "" {
		pidsMax = counter(filepath.Join(c.pids, "pids.events"), "max")
	}
	switch {
	case c.memory == "":
	case c.how == EnforcedCgroup2:
		oomKills = counter(filepath.Join(c.memory, "memory.events"), "oom_kill")
	default:
		oomKills = counter(filepath.Join(c.memory, "memory.oom_control"), "oom_kill")
	}
	return pidsMax, oomKills
}

// counter reads the value of key in a flat-keyed cgroup file.
func counter(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// Close removes the cage's cgroups (their processes are gone by then).
func (c *Cage) Close() error {
	return c.removeMade()
}

func (c *Cage) removeMade() error {
	var errs []error
	for i := len(c.made) - 1; i >= 0; i-- {
		if err := os.Remove(c.made[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the cgroup %s: %w", c.made[i], err))
		}
	}
	c.made = nil
	return errors.Join(errs...)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Size writes a number of bytes in binary units ("8GiB").
func Size(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 && math.Mod(f, 1024) == 0 {
		f /= 1024
		i++
	}
	return strconv.FormatFloat(f, 'f', -1, 64) + units[i]
}

// ParseSize reads a number of bytes: an integer, or a number with a unit
// (B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB as powers of 1000).
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%q is not a size; write it like \"8GiB\" or \"512MiB\"", s)
	}
	mult := map[string]float64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
		"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%q has an unknown unit %q; use B, KiB, MiB, GiB or TiB", s, unit)
	}
	return int64(f * mult), nil
}
