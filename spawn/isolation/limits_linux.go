package isolation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// cgroupRoot is where cgroup filesystems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroups gives c cgroups of its own (v2, else v1) and reports whether it
// could; when it could not, c has none left.
func (c *Cage) cgroups(name string) bool {
	if err := c.cgroup2(name); err == nil {
		return true
	}
	c.removeMade()
	if err := c.cgroup1(name); err == nil {
		return true
	}
	c.removeMade()
	c.pids, c.memory = "", ""
	return false
}

// ownCgroup is this process's cgroup in the hierarchy named by key in
// /proc/self/cgroup ("" for v2's unified line "0::/path", else a
// controller such as "pids").
func ownCgroup(key string) (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if key == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2], nil
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			if key != "" && ctl == key {
				return parts[2], nil
			}
		}
	}
	return "", fmt.Errorf("no %q cgroup for this process", key)
}

// cgroup2 makes a child of spawn's own cgroup v2 with the pids and memory
// controllers.
func (c *Cage) cgroup2(name string) error {
	own, err := ownCgroup("")
	if err != nil {
		return err
	}
	var mount string
	for _, m := range []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")} {
		var st syscall.Statfs_t
		if syscall.Statfs(m, &st) == nil && st.Type == 0x63677270 { // CGROUP2_SUPER_MAGIC
			mount = m
			break
		}
	}
	if mount == "" {
		return errors.New("no cgroup v2")
	}
	dir := filepath.Join(mount, own, "spawn-"+name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	c.made = append(c.made, dir)
	for _, f := range []string{"pids.max", "memory.max"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("cgroup v2 without the %s controller here: %w", strings.Split(f, ".")[0], err)
		}
	}
	if err := c.write(dir, "pids.max", int64(c.limits.Processes)); err != nil {
		return err
	}
	if err := c.write(dir, "memory.max", c.limits.Memory); err != nil {
		return err
	}
	if c.limits.Memory > 0 {
		if err := os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	c.pids, c.memory, c.how = dir, dir, EnforcedCgroup2
	return nil
}

// cgroup1 makes cgroups of the agent's own in cgroup v1's pids and memory
// hierarchies, under this process's.
func (c *Cage) cgroup1(name string) error {
	for _, ctl := range []struct {
		name  string
		dst   *string
		file  string
		limit int64
	}{
		{"pids", &c.pids, "pids.max", int64(c.limits.Processes)},
		{"memory", &c.memory, "memory.limit_in_bytes", c.limits.Memory},
	} {
		own, err := ownCgroup(ctl.name)
		if err != nil {
			return err
		}
		dir := filepath.Join(cgroupRoot, ctl.name, own, "spawn-"+name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		c.made = append(c.made, dir)
		if err := c.write(dir, ctl.file, ctl.limit); err != nil {
			return err
		}
		*ctl.dst = dir
	}
	if c.limits.Memory > 0 {
		// With swap accounting, swap counts too: a tree cannot page its way past the limit.
		if err := os.WriteFile(filepath.Join(c.memory, "memory.memsw.limit_in_bytes"), []byte(strconv.FormatInt(c.limits.Memory, 10)), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	c.how = EnforcedCgroup1
	return nil
}

// write sets a cgroup's limit file to n ("max" for none).
func (c *Cage) write(dir, file string, n int64) error {
	v := "max"
	if n > 0 {
		v = strconv.FormatInt(n, 10)
	} else if c.how == EnforcedCgroup1 || strings.HasSuffix(file, "limit_in_bytes") {
		return nil // v1's default is no limit
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
		return fmt.Errorf("set %s: %w", file, err)
	}
	return nil
}

// rlimitNproc is RLIMIT_NPROC on Linux, which package syscall does not name.
const rlimitNproc = 6

// userProcesses counts the processes of this process's user.
func userProcesses() int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	uid := os.Getuid()
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name()), &st) == nil && int(st.Uid) == uid {
			n++
		}
	}
	return n
}

// freeSpace is the filesystem of p and the bytes free on it for an
// unprivileged writer.
func freeSpace(p string) (id, free uint64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(p, &st); err != nil {
		return 0, 0, false
	}
	return uint64(st.Fsid.X__val[0])<<32 | uint64(uint32(st.Fsid.X__val[1])), st.Bavail * uint64(st.Bsize), true
}
