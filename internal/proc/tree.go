package proc

import "sort"

// procInfo is one process as the system's process table shows it (/proc
// on Linux, sysctl kern.proc on Darwin).
type procInfo struct {
	pid, ppid, pgid int
	// start is when the process started, in the table's own unit: two
	// processes that held the same pid have different starts.
	start int64
	// zombie is a process that has exited and waits to be reaped: it
	// runs nothing, and a signal does nothing to it.
	zombie bool
}

// descendants lists the descendants of root (not root itself) in procs,
// parents before their children.
func descendants(procs []procInfo, root int) []int {
	children := map[int][]int{}
	for _, p := range procs {
		if p.pid != p.ppid {
			children[p.ppid] = append(children[p.ppid], p.pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// lineage is what a supervisor (root: an agent's reaper, which leads the
// agent's process group) knows of the processes the agent started, on a
// system where a process whose parent exits is handed to init (launchd)
// rather than to the supervisor: every process it ever saw below root or
// in root's group, with its start, so that one re-parented to init since
// is still known as the agent's, and a pid reused by another process is
// not.
type lineage struct {
	root int
	seen map[int]int64 // pid -> start
}

func newLineage(root int) *lineage {
	return &lineage{root: root, seen: map[int]int64{}}
}

// observe adds to what l knows the descendants of root and the members of
// root's process group in procs, and returns those it had not seen (the
// supervisor watches them from then on).
func (l *lineage) observe(procs []procInfo) []int {
	byPid := index(procs)
	var fresh []int
	add := func(pid int) {
		p, ok := byPid[pid]
		if !ok || pid == l.root {
			return
		}
		if start, known := l.seen[pid]; known && start == p.start {
			return
		}
		l.seen[pid] = p.start
		fresh = append(fresh, pid)
	}
	for _, pid := range descendants(procs, l.root) {
		add(pid)
	}
	for _, p := range procs {
		if p.pgid == l.root {
			add(p.pid)
		}
	}
	return fresh
}

// targets lists the processes of procs that are the agent's and still run
// (zombies left out), root excluded: the descendants of root, the members
// of its group, those l saw before (the same pid with the same start:
// re-parented since, or moved to a session of their own), their
// descendants, and those marked reports as carrying the agent's mark
// (started by the agent, then detached and orphaned before l saw them).
// marked may be nil. The list is sorted.
func (l *lineage) targets(procs []procInfo, marked func(pid int) bool) []int {
	byPid := index(procs)
	set := map[int]bool{}
	for _, pid := range descendants(procs, l.root) {
		set[pid] = true
	}
	for _, p := range procs {
		switch {
		case p.pid == l.root || p.pid <= 1:
		case p.pgid == l.root:
			set[p.pid] = true
		case l.seen[p.pid] == p.start && hasKey(l.seen, p.pid):
			set[p.pid] = true
		case marked != nil && marked(p.pid):
			set[p.pid] = true
		}
	}
	// What the agent's orphans started since is the agent's too.
	for pid := range set {
		for _, d := range descendants(procs, pid) {
			set[d] = true
		}
	}
	var out []int
	for pid := range set {
		if p, ok := byPid[pid]; ok && !p.zombie && pid != l.root {
			out = append(out, pid)
		}
	}
	sort.Ints(out)
	return out
}

func index(procs []procInfo) map[int]procInfo {
	m := make(map[int]procInfo, len(procs))
	for _, p := range procs {
		m[p.pid] = p
	}
	return m
}

func hasKey(m map[int]int64, k int) bool {
	_, ok := m[k]
	return ok
}
