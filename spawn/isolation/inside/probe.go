package inside

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/text"
)

// ProbeArg, as the first argument, makes spawn's binary (and the test
// binaries that stand in for it) the subject of the Seatbelt probe
// instead of itself (internal/entry dispatches it): it tries the
// operations its second argument lists (JSON) and prints what each did
// (JSON). See isolation.ProbeSeatbelt.
const ProbeArg = "__spawn-seatbelt-probe__"

// ProbeSubject is the probe subject's main: args are the arguments after
// ProbeArg (the operations to try, as JSON). It prints what each did and
// returns the exit code.
func ProbeSubject(args []string, out io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "spawn: the Seatbelt probe takes one argument")
		return 2
	}
	return probeSubject(args[0], out)
}

// Task is one operation the Seatbelt probe's subject tries.
type Task struct {
	Op   string `json:"op"`             // write, read, link-write, connect, environ, exec
	Path string `json:"path,omitempty"` // the file (write, read, exec; link-write: the file to link)
	To   string `json:"to,omitempty"`   // link-write: where the link goes
	Addr string `json:"addr,omitempty"` // connect
	Pid  int    `json:"pid,omitempty"`  // environ
	Want string `json:"want,omitempty"` // what a read, a connection's greeting or an environment holds when the operation succeeded
}

// Result is what one Task did, as the subject saw it.
type Result struct {
	Done   bool   `json:"done"`
	Detail string `json:"detail,omitempty"`
}

// probeSubject runs the tasks of arg (JSON) and writes their results
// (JSON) to out; it returns the exit code.
func probeSubject(arg string, out io.Writer) int {
	var tasks []Task
	if err := json.Unmarshal([]byte(arg), &tasks); err != nil {
		fmt.Fprintf(os.Stderr, "spawn seatbelt probe: %v\n", err)
		return 2
	}
	results := make([]Result, len(tasks))
	for i, t := range tasks {
		results[i] = t.try()
	}
	if err := json.NewEncoder(out).Encode(results); err != nil {
		fmt.Fprintf(os.Stderr, "spawn seatbelt probe: %v\n", err)
		return 2
	}
	return 0
}

// try does t and says whether it succeeded, or the error it met.
func (t Task) try() Result {
	fail := func(err error) Result { return Result{Detail: err.Error()} }
	switch t.Op {
	case "write":
		f, err := os.OpenFile(t.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return fail(err)
		}
		_, err = io.WriteString(f, t.Want)
		if err = errors.Join(err, f.Close()); err != nil {
			return fail(err)
		}
		return Result{Done: true}
	case "link-write":
		if err := os.Link(t.Path, t.To); err != nil {
			return fail(err)
		}
		return Task{Op: "write", Path: t.To, Want: "changed"}.try()
	case "read":
		b, err := os.ReadFile(t.Path)
		if err != nil {
			return fail(err)
		}
		if string(b) != t.Want {
			return Result{Detail: fmt.Sprintf("read %d bytes, not the file's", len(b))}
		}
		return Result{Done: true}
	case "connect":
		c, err := net.DialTimeout("tcp", t.Addr, 5*time.Second)
		if err != nil {
			return fail(err)
		}
		defer c.Close()
		if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			return fail(err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return fail(err)
		}
		return Result{Done: strings.TrimSpace(line) == t.Want}
	case "exec":
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := proc.Run(ctx, proc.Cmd{Path: t.Path, Args: []string{"--version"}, Env: os.Environ()})
		if err != nil {
			return fail(err)
		}
		if !strings.HasPrefix(string(out), t.Want) {
			return Result{Detail: fmt.Sprintf("it printed %q", text.FirstLine(string(out)))}
		}
		return Result{Done: true}
	case "environ":
		b, err := processEnviron(t.Pid)
		if err != nil {
			return fail(err)
		}
		if !strings.Contains(string(b), t.Want) {
			return Result{Detail: "its environment did not hold the secret"}
		}
		return Result{Done: true}
	}
	return Result{Detail: fmt.Sprintf("unknown operation %q", t.Op)}
}
