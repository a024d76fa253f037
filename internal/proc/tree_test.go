package proc

import (
	"encoding/binary"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The supervision logic of a system without a subreaper (Darwin), on
// process tables written out: what the reaper finds, and what only the
// tree's mark finds.
func TestLineageFollowsProcessesThatDetachAndAreOrphaned(t *testing.T) {
	const reaper = 100
	table := []procInfo{
		{pid: 1, ppid: 0, pgid: 1, start: 1},              // launchd
		{pid: reaper, ppid: 50, pgid: reaper, start: 10},  // the reaper, spawn's child
		{pid: 101, ppid: reaper, pgid: reaper, start: 11}, // the agent
		{pid: 102, ppid: 101, pgid: 102, start: 12},       // a tool that made a session of its own
		{pid: 200, ppid: 50, pgid: 200, start: 13},        // another process of spawn's: not the agent's
		{pid: 300, ppid: 1, pgid: 300, start: 14},         // the user's daemon
		{pid: 301, ppid: 300, pgid: 300, start: 15, zombie: true},
	}
	l := newLineage(reaper)
	assert.Equal(t, []int{101, 102}, l.observe(table))
	assert.Empty(t, l.observe(table), "nothing new")

	// 102 forked 104 and exited: 104 went to launchd. 101 forked 103. 102's
	// pid is reused by a process that is not the agent's.
	later := []procInfo{
		table[0], table[1], table[2], table[4], table[5],
		{pid: 103, ppid: 101, pgid: reaper, start: 20},
		{pid: 104, ppid: 1, pgid: 102, start: 21},
		{pid: 105, ppid: 104, pgid: 102, start: 22},
		{pid: 102, ppid: 1, pgid: 102, start: 30},
		{pid: 106, ppid: 1, pgid: reaper, start: 23},                    // orphaned in the agent's group
		{pid: 107, ppid: reaper, pgid: reaper, start: 24, zombie: true}, // dead already
	}
	assert.Equal(t, []int{101, 103, 106}, l.targets(later, nil),
		"without the mark, the orphan 104 that was never seen escapes, and the reused pid 102 is spared")
	marked := func(pid int) bool { return pid == 104 }
	assert.Equal(t, []int{101, 103, 104, 105, 106}, l.targets(later, marked),
		"the mark finds the orphan, and what it started")

	// Seen once, then orphaned: found without the mark.
	l.observe([]procInfo{table[1], {pid: 104, ppid: 102, pgid: 102, start: 21}, {pid: 102, ppid: 101, pgid: 102, start: 12}, table[2]})
	assert.Equal(t, []int{101, 103, 104, 105, 106}, l.targets(later, nil))
}

func TestDescendantsAreListedParentsFirst(t *testing.T) {
	table := []procInfo{{pid: 1}, {pid: 5, ppid: 1}, {pid: 7, ppid: 5}, {pid: 6, ppid: 5}, {pid: 9, ppid: 7}, {pid: 8, ppid: 1}}
	assert.Equal(t, []int{7, 6, 9}, descendants(table, 5))
	assert.Empty(t, descendants(table, 9))
}

// The layout of sysctl kern.procargs2: argc, the executable's path and its
// padding, the arguments, then the environment and the loader's strings.
func TestProcArgsHasFindsTheMarkInTheEnvironmentOnly(t *testing.T) {
	buf := func(argc uint32, words ...string) []byte {
		b := binary.LittleEndian.AppendUint32(nil, argc)
		b = append(b, "/usr/bin/claude\x00\x00\x00\x00"...)
		for _, w := range words {
			b = append(b, w...)
			b = append(b, 0)
		}
		return b
	}
	const mark = "SPAWN_PROC_TREE=100-abc"
	assert.True(t, procArgsHas(buf(2, "claude", "-p", "HOME=/h", mark, "executable_path=/usr/bin/claude"), mark))
	assert.False(t, procArgsHas(buf(2, "claude", mark, "HOME=/h"), mark), "an argument is not the environment")
	assert.True(t, procArgsHas(buf(3, "claude", "", "-p", mark), mark), "an empty argument counts as one")
	assert.False(t, procArgsHas(buf(1, "claude", mark+"d"), mark), "compared whole")
	assert.False(t, procArgsHas(buf(1, "claude", "SPAWN_PROC_TREE=100-abd"), mark), "another tree's")
	assert.False(t, procArgsHas([]byte{1, 0}, mark))
	assert.False(t, procArgsHas(append(binary.LittleEndian.AppendUint32(nil, 1), "/bin/sh"...), mark), "cut short")
}

// The process table as this system shows it: this test's own process, its
// parent and its group.
func TestListProcsSeesThisProcess(t *testing.T) {
	procs, err := listProcs()
	require.NoError(t, err)
	me, ok := index(procs)[os.Getpid()]
	require.True(t, ok)
	assert.Equal(t, os.Getppid(), me.ppid)
	pgid, err := syscall.Getpgid(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, pgid, me.pgid)
	assert.NotZero(t, me.start)
	assert.False(t, me.zombie)
}
