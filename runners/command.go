package runners

import (
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
)

// Command is one agent process to start. The watcher starts it through
// spawn's exec seam; runners never start processes.
type Command struct {
	Path  string   // the binary: a name looked up in PATH, or a path
	Args  []string // arguments after Path
	Env   []string // KEY=VALUE pairs added to (and overriding) the inherited environment
	Dir   string   // working directory
	Stdin string   // written to the process's stdin, then stdin is closed: the prompt
	// ToolGrace is how much longer than the turn's ToolTimeout the
	// supervisor lets a tool call stay silent, for a CLI that stops its own
	// tool calls at ToolTimeout: it is given the time to stop the call and
	// tell its model so before the supervisor stops the whole agent. 0 for
	// a CLI that does not.
	ToolGrace time.Duration
	// Cage holds the agent's process tree to its limits; set by spawn's
	// confinement, nil from the runners.
	Cage *proc.Cage
	// Wrapper says that Path is the sandbox the agent runs in
	// (bubblewrap), not the agent: signals meant for the agent pass it by
	// (proc.Cmd.Wrapper). Set by spawn's confinement.
	Wrapper bool
}

// Turn is one invocation of an agent: a new session, or a resumed one.
type Turn struct {
	Prompt string
	Dir    string
	// Resume is the session id to resume; empty starts a new session.
	Resume string
	// Allow holds extra tool rules granted for this turn only (escalation),
	// added to the runner's own allowed tools.
	Allow []string
	// MaxTurns is passed to the CLI as its own turn cap; 0 means none.
	MaxTurns int
	// ToolTimeout is the longest one tool call of the turn may run: the
	// supervisor's tool_timeout. A CLI that bounds its own tool calls is
	// given it as that bound (claude: its Bash tool's default and longest
	// timeout); 0 leaves the CLI's own bound.
	ToolTimeout time.Duration
}
