package spawn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/relay"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
	"github.com/infinite-improbability-drive/spawn/spawn/runs/inbox"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// confinement is how a run's agents are confined: the isolation the run
// got, the model relay that holds the real credentials, the agents'
// private directories, spawn's own files they read, and, without
// bubblewrap, the guard that catches changes to the user's repository.
type confinement struct {
	report  isolation.Report
	network isolation.Network
	relay   *relay.Relay
	root    string // the agents' private directories, one per agent, removed by finish
	control string // spawn's files the agents read and never write (hook settings): root/control
	userEnv []string
	user    config.Environment // what userEnv says to spawn
	sb      *sandbox.Sandbox
	inbox   *inbox.Inbox
	exe     string // this binary: the hooks, the model bridge and the git helper run it
	sockDir string // model-only: the directory of the relay's unix socket
	// guard checks the user's repository around each agent turn when no
	// sandbox keeps it read-only; nil under bubblewrap.
	guard *isolation.Guard
	// sessions is where the coder's sessions are kept between spawn
	// processes (in the run directory); restored says they were copied
	// into this confinement's private config directory.
	sessions string
	restored bool
	// coderSessions are the folders of the coder's private directory that
	// hold its CLI's sessions (runners.Agent.Sessions).
	coderSessions []string

	limits isolation.Limits // each agent's process tree's
	cache  string           // the coder's toolchain caches (isolation.CacheDir); "" for a private one
	mu     sync.Mutex
	keys   map[string]string        // seat -> its relay key
	agents map[string]runners.Agent // seat -> its agent, made once
	cages  int                      // cages made, naming them
}

// confine sets up a run's confinement once its sandbox exists: the relay
// with a route for each provider the seats call (spent is told what every
// answer it forwards used, and allow refuses a request once the budget is
// spent), the agents' private root and the guard. The caller closes it.
func confine(ctx context.Context, opts Options, report isolation.Report, seats seats, sb *sandbox.Sandbox, dir runs.Paths, spent func(relay.Usage), allow func() error) (c *confinement, err error) {
	id := dir.ID
	c = &confinement{report: report, network: opts.Config.Sandbox.Network.Effective(report.Mode), userEnv: opts.Env, user: opts.environ, sb: sb, exe: sb.Exe,
		inbox: dir.Inbox(), sessions: dir.SessionsDir(), keys: map[string]string{}, limits: opts.Config.Sandbox.Limits()}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.close())
		}
	}()
	if !report.Mode.Confines() {
		common, err := sb.Repo.CommonDir(ctx)
		if err != nil {
			return c, fmt.Errorf("find the repository's git directory: %w", err)
		}
		// Every run's spawn/ branches are spawn's, not the user's: runs on
		// one repository make and move them while this run's agents work.
		branch := "refs/heads/" + sb.Branch
		c.guard = &isolation.Guard{Git: sb.Repo, CommonDir: common, Own: func(ref string) bool {
			return ref == branch || strings.HasPrefix(ref, "refs/heads/spawn/")
		}}
	}
	if c.root, err = os.MkdirTemp(opts.environ.TmpDir, "spawn-agents-"+id+"-"); err != nil {
		return c, fmt.Errorf("create the agents' private directory: %w", err)
	}
	common, err := sb.Repo.CommonDir(ctx)
	if err != nil {
		return c, fmt.Errorf("find the repository's git directory: %w", err)
	}
	if c.cache, err = isolation.CacheDir(opts.environ.Dirs(), opts.Config.Sandbox.Cache, common); err != nil {
		return c, err
	}
	c.control = filepath.Join(c.root, "control")
	if err := os.Mkdir(c.control, 0o700); err != nil {
		return c, fmt.Errorf("create spawn's control directory: %w", err)
	}
	if err := c.startRelay(seats, spent, allow); err != nil {
		return c, err
	}
	return c, nil
}

// startRelay starts the model relay with a route for the model API of
// each seat's CLI, carrying the user's credential for it. A route's
// upstream is the provider's base-URL variable of the user's environment
// when it is set (a company gateway), else the provider's API.
func (c *confinement) startRelay(seats seats, spent func(relay.Usage), allow func() error) error {
	var routes []relay.Route
	seen := map[string]bool{}
	for _, s := range seats.all() {
		p := s.adapter.Provider()
		if seen[p.Route] {
			continue
		}
		seen[p.Route] = true
		base := c.user.Providers.Get(p.BaseVar)
		if base == "" {
			base = p.Default
		}
		u, err := url.Parse(base)
		if err != nil || u.Host == "" {
			return fault.Errorf(fault.KindConfig, err, "%s=%q is not a URL; fix it, then run again", p.BaseVar, base)
		}
		routes = append(routes, relay.Route{Name: p.Route, Upstream: u, Credential: p.Credential(c.user.Providers), Paths: p.Paths, Meter: runners.NewMeter})
	}
	r, err := relay.Start(routes, relay.Options{Used: spent, Allow: allow})
	if err != nil {
		return fault.Errorf(fault.KindInternal, err, "cannot start the model relay: %v", err)
	}
	c.relay = r
	// Under Seatbelt there is no network namespace to bridge into: the
	// agents reach the relay's port on the loopback, the one address their
	// profile allows (isolation.Spec.RelayPort).
	if c.network == isolation.NetworkModelOnly && c.report.Mode == isolation.ModeBwrap {
		if err := c.serveBridge(); err != nil {
			return err
		}
	}
	return nil
}

// grant returns the relay key of seat for route, made once.
func (c *confinement) grant(route, seat string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.keys[seat]; ok {
		return k, nil
	}
	k, err := c.relay.Grant(route, seat)
	if err != nil {
		return "", fault.Errorf(fault.KindInternal, err, "cannot make the %s's relay key: %v", seat, err)
	}
	c.keys[seat] = k
	return k, nil
}

// serveBridge serves the relay on a unix socket too, for the bridge of a
// model-only sandbox.
func (c *confinement) serveBridge() error {
	// A unix socket's path has at most 107 bytes: a short directory, in
	// /tmp when the user's TMPDIR is too long a path.
	dir, err := os.MkdirTemp("", "spawn-relay-")
	if err == nil && len(dir) > 80 {
		if err = os.Remove(dir); err == nil {
			dir, err = os.MkdirTemp("/tmp", "spawn-relay-")
		}
	}
	if err != nil {
		return fault.Errorf(fault.KindInternal, err, "cannot create the relay's socket directory: %v", err)
	}
	c.sockDir = dir
	if err := c.relay.ServeUnix(filepath.Join(dir, "relay.sock")); err != nil {
		return fault.Errorf(fault.KindInternal, err, "cannot serve the model relay to the sandbox: %v", err)
	}
	return nil
}

// close stops the relay, keeps the coder's sessions in the run directory
// (for spawn resume) and removes the agents' private directories.
func (c *confinement) close() error {
	var errs []error
	if c.root != "" && c.sessions != "" && len(c.coderSessions) > 0 {
		errs = append(errs, runs.KeepSessions(filepath.Join(c.root, "coder"), c.coderSessions, c.sessions, observability.RedactorOf(c.user.Secrets...)))
	}
	if c.relay != nil {
		errs = append(errs, c.relay.Close())
		c.relay = nil
	}
	for _, d := range []*string{&c.root, &c.sockDir} {
		if *d != "" {
			errs = append(errs, os.RemoveAll(*d))
			*d = ""
		}
	}
	return errors.Join(errs...)
}

// cleanup is close as one of a run's cleanups (run.finish).
func (c *confinement) cleanup(context.Context) error { return c.close() }

// record is the isolation the record states.
func (c *confinement) record() *observability.Isolation {
	probe := isolation.NewCage(filepath.Base(c.root)+"-probe", c.limits, nil)
	enforced := probe.Enforced()
	if err := probe.Close(); err != nil {
		enforced = isolation.EnforcedRlimit
	}
	return &observability.Isolation{Mode: string(c.report.Mode), Network: string(c.network), Reason: c.report.Reason,
		Limits: observability.Limits{Processes: c.limits.Processes, MemoryBytes: c.limits.Memory, DiskBytes: c.limits.Disk, EnforcedBy: string(enforced)}}
}

// private makes (if need be) and returns an agent's private directory
// under the run's root: the only place of its own it can write, where its
// adapter keeps its home, temporary files and state. It lasts the run: a
// resumed session finds its files.
func (c *confinement) private(name string) (string, error) {
	dir := filepath.Join(c.root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s's private directory: %w", name, err)
	}
	return dir, nil
}

// writeControl writes one of spawn's files that an agent reads (and never
// writes) into the control directory, replacing it whole: a temporary
// file renamed into place, so that nothing at the path (a link an agent
// made, without bubblewrap) is followed.
func (c *confinement) writeControl(name string, data []byte) (string, error) {
	f, err := os.CreateTemp(c.control, ".new-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), filepath.Join(c.control, name))
	}
	if err != nil {
		return "", errors.Join(err, os.Remove(f.Name()))
	}
	return filepath.Join(c.control, name), nil
}

// seat returns the agent of one seat (named name: "coder", or a
// reviewer seat's directory), confined, and the environment it runs with:
// no credential, its adapter's private homes in its own directory, the
// relay's route for its model API as its API, with a key for this seat
// alone. No login file of the user's is shown: the relay carries the
// credential.
//
// Under bubblewrap the coder writes its worktree (with its own git store),
// its private directory, its toolchain caches and the inbox's deliveries;
// it reads the system's toolchains, its CLI's install, the user's objects,
// this binary (its hooks), the inbox's messages and its hook settings. A
// reviewer writes nothing but its private directory and reads the
// worktree. Neither sees anything else of the host.
func (c *confinement) seat(cli seatCLI, s runners.Seat, name string, binds coderBinds) (*confined, []string, error) {
	dir, err := c.private(name)
	if err != nil {
		return nil, nil, err
	}
	agent, err := c.agent(cli, s, name, dir)
	if err != nil {
		return nil, nil, err
	}
	coder := s.Role == runners.RoleCoder
	var extra []string
	if coder {
		extra = c.caches(dir)
	}
	env := isolation.AgentEnv(c.userEnv, append(extra, agent.Env()...)...)
	writable := []string{dir}
	if coder {
		writable = []string{c.sb.Path, dir}
	}
	caged := c.caged(agent, name, writable...)
	caged.provider = cli.adapter.Provider()
	if !c.report.Mode.Confines() {
		return caged, env, nil
	}
	var spec isolation.Spec
	if coder {
		spec = c.spec(env, cli.bin, []string{c.sb.Path, dir, binds.delivered, c.cache}, c.sb.Objects)
		spec.ReadOnly = append(spec.ReadOnly, binds.readOnly()...)
	} else {
		spec = c.spec(env, cli.bin, []string{dir}, append([]string{c.sb.Path}, c.sb.Objects...))
	}
	caged.spec = &spec
	return caged, env, nil
}

// agent is the agent of the seat name, made once, in its private
// directory dir while nothing has run there yet: the files its adapter
// writes (a CLI's settings) are never written again where an agent could
// have put a link. The coder's kept sessions are restored then.
func (c *confinement) agent(cli seatCLI, s runners.Seat, name, dir string) (runners.Agent, error) {
	c.mu.Lock()
	a, ok := c.agents[name]
	c.mu.Unlock()
	if ok {
		return a, nil
	}
	route := cli.adapter.Provider().Route
	key, err := c.grant(route, name)
	if err != nil {
		return nil, err
	}
	s.Bin, s.Settings, s.Dir = cli.bin, cli.settings, dir
	s.RelayURL, s.RelayKey, s.Confined = c.relay.URL(route), key, c.report.Mode.Confines()
	if a, err = cli.adapter.Seat(s); err != nil {
		return nil, fmt.Errorf("prepare the %s seat: %w", cli.name(), err)
	}
	if s.Role == runners.RoleCoder {
		if err := c.restoreSessions(dir, cli.adapter.Sessions()); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.agents == nil {
		c.agents = map[string]runners.Agent{}
	}
	c.agents[name] = a
	return a, nil
}

// restoreSessions copies the coder's kept sessions (a run resumed by
// another spawn process) into its private directory dir, once; and notes
// where its CLI keeps them (sessions, relative to dir), for close to keep
// them again.
func (c *confinement) restoreSessions(dir string, sessions []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.coderSessions = sessions
	if c.restored || c.sessions == "" {
		return nil
	}
	c.restored = true
	return runs.RestoreSessions(c.sessions, dir)
}

// caches are the coder's toolchain cache variables: the caches spawn
// keeps (c.cache), else private ones in the agent's directory dir; and the
// user's Go module cache, read-only in the sandbox, when there is one.
func (c *confinement) caches(dir string) []string {
	var env []string
	for _, cd := range isolation.CacheDirs {
		root := c.cache
		if root == "" {
			root = filepath.Join(dir, "cache")
		}
		env = append(env, cd.Var+"="+filepath.Join(root, cd.Dir))
	}
	if mod := goModCache(c.user); mod != "" {
		env = append(env, "GOMODCACHE="+mod)
	}
	return env
}

// goModCache is the user's Go module cache, "" when there is none.
func goModCache(env config.Environment) string {
	mod := env.GoModCache
	if mod == "" {
		gopath := env.GoPath
		if gopath == "" {
			gopath = filepath.Join(env.Home, "go")
		}
		mod = filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
	}
	if !filepath.IsAbs(mod) || !fileExists(mod) {
		return ""
	}
	return mod
}

// spec is the sandbox (bubblewrap or Seatbelt) of one agent whose CLI is bin: the
// system's toolchains, bin's install and this binary read-only, readOnly
// read-only, writable writable, the secrets among the toolchains masked,
// and the model-only network when the run has it.
func (c *confinement) spec(env []string, bin string, writable, readOnly []string) isolation.Spec {
	ro := append(isolation.Toolchains(env), installDir(bin), c.exe)
	ro = append(ro, readOnly...)
	var rw []string
	for _, w := range writable {
		if w != "" {
			rw = append(rw, w)
		}
	}
	s := isolation.Spec{Bwrap: c.report.Bwrap, SandboxExec: c.report.SandboxExec, ReadOnly: ro, Writable: rw, Files: isolation.Masks(c.user.Home),
		NoNetwork: c.network == isolation.NetworkModelOnly}
	if s.NoNetwork {
		s.RelayPort = c.relay.Port()
	}
	return s
}

// installDir is what a sandbox must show of an agent CLI at bin (a path,
// or a name in PATH, as the preflight resolved it): the node_modules
// folder that holds it (an npm install's bin/ links into its packages),
// else bin's own folder.
func installDir(bin string) string {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		real = bin
	}
	for d := filepath.Dir(real); d != "/" && d != "."; d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			for p := filepath.Dir(d); p != "/" && p != "."; p = filepath.Dir(p) {
				if filepath.Base(p) == "node_modules" {
					d = p // the outermost: nested installs share it
				}
			}
			return d
		}
	}
	return filepath.Dir(real)
}

// helperJail is where spawn's git helper runs on the coder's worktree and
// store: with the coder's view of the files (its worktree writable, the
// user's objects read-only), no network and no credential under
// bubblewrap; without it, with an environment that holds no credential.
func (c *confinement) helperJail() sandbox.Jail {
	return isolation.GitJail(c.report, c.userEnv, c.sb)
}

// caged is agent in a new cage of the run's limits, watching the
// filesystems of writable; named seat.
func (c *confinement) caged(agent runners.Agent, seat string, writable ...string) *confined {
	c.mu.Lock()
	c.cages++
	name := fmt.Sprintf("%s-%d", filepath.Base(c.root), c.cages)
	c.mu.Unlock()
	return &confined{Agent: agent, cage: isolation.NewCage(name, c.limits, writable), conf: c}
}

// confined is an agent held in its cage, and, under bubblewrap, whose
// commands run in its sandbox.
type confined struct {
	runners.Agent
	provider runners.Provider // the model API it calls
	spec     *isolation.Spec  // nil without bubblewrap
	cage     *isolation.Cage
	conf     *confinement
}

// Command is the agent's command for t, in its cage, wrapped in bwrap
// (and, with the model-only network, in the bridge to the relay). The
// cage's marks are taken: its limits count from this process's start.
func (c *confined) Command(t runners.Turn) (runners.Command, error) {
	cmd, err := c.Agent.Command(t)
	if err != nil {
		return cmd, err
	}
	cmd.Cage = c.cage.Proc()
	c.cage.Mark()
	if c.spec == nil {
		return cmd, nil
	}
	spec := *c.spec
	if c.conf.sockDir != "" {
		var argv []string
		spec, argv = isolation.Bridged(spec, c.conf.exe, filepath.Join(c.conf.sockDir, "relay.sock"), c.conf.relay.Port(),
			append([]string{cmd.Path}, cmd.Args...))
		cmd.Path, cmd.Args = argv[0], argv[1:]
	}
	return spec.Wrap(cmd), nil
}

// watch is the session's watcher.Policy.Watch: the limit of the cage its
// agent reached, if any, and what reached it.
func (c *confined) watch() (watcher.StopReason, string) {
	what, detail := c.cage.Check()
	switch what {
	case isolation.ExceededProcesses:
		return watcher.StopMaxProcesses, detail
	case isolation.ExceededMemory:
		return watcher.StopMaxMemory, detail
	case isolation.ExceededDisk:
		return watcher.StopMaxDisk, detail
	}
	return "", ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// guarded runs one agent turn between two snapshots of what the user
// relies on in the repository (refs outside spawn's, HEAD, .git/config,
// hooks, the work tree's status) when no sandbox keeps them read-only.
// What changed is undone where git can undo it safely, each change is a
// critical sandbox_tamper security finding, and the turn's error is a
// fault.KindSandboxTamper *fault.Error (the work stays on the run's branch), joined
// before turn's own error.
//
// Under bubblewrap the agents cannot write any of it, so whatever changes
// there during a turn is the user's (a commit on main, a new branch) or
// another run's: nothing is checked (four git processes fewer per turn),
// and nothing of theirs is undone. Without it, spawn cannot tell the
// user's change from an agent's; only every run's spawn/ branches are
// left alone.
func (r *run) guarded(ctx context.Context, who agent, turn func() (*watcher.Session, error)) (*watcher.Session, error) {
	if r.conf.guard == nil {
		return turn()
	}
	before, err := r.conf.guard.Take(ctx)
	if err != nil {
		return nil, fault.Errorf(fault.KindInternal, err, "cannot snapshot the repository before %s's turn: %v", who.cli, err)
	}
	sess, turnErr := turn()
	checkCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	changes, err := r.conf.guard.Check(checkCtx, before)
	var tampered []string
	for _, ch := range changes {
		state := "spawn undid it"
		if !ch.Restored {
			state = "spawn could not undo it; check it yourself"
		}
		r.security(who, observability.FindingSandboxTamper, observability.SeverityCritical, r.sb.Repo.Dir,
			fmt.Sprintf("%s (%s) changed something outside its sandbox: %s; %s", who.cli, who.role, ch.What, state),
			"Do not merge the run's branch unread: an agent that touches the user's repository was probably prompt-injected. Look for the instruction in the task, the repository or the tool output.")
		tampered = append(tampered, ch.What)
	}
	var errs []error
	if len(tampered) > 0 {
		errs = append(errs, fault.Errorf(fault.KindSandboxTamper, nil, "%s changed what is yours outside its sandbox (%s); spawn stopped the run and undid what it could; the work is kept on %s, review it before merging",
			who.cli, strings.Join(tampered, "; "), r.sb.Branch))
	}
	if err != nil {
		errs = append(errs, fault.Errorf(fault.KindInternal, err, "cannot check the repository after %s's turn: %v", who.cli, err))
	}
	return sess, errors.Join(append(errs, turnErr)...)
}

// security puts a security finding about who's turn on the event stream,
// with a warning the terminal shows.
func (r *run) security(who agent, kind observability.FindingKind, severity observability.Severity, file, description, recommendation string) {
	r.mu.Lock()
	r.tamperN++
	id := fmt.Sprintf("%s-%d", kind, r.tamperN)
	r.mu.Unlock()
	f := &observability.SecurityFinding{ID: id, Kind: kind, Iteration: who.round, Severity: severity, File: file,
		Description: description, Recommendation: recommendation, Status: observability.FindingOpen}
	r.emit(observability.Event{Kind: observability.EventSecurity, Round: who.round, Role: who.role, LLM: who.llm, Security: f})
	r.emit(observability.Event{Kind: observability.EventWarning, Text: strings.ToUpper(strings.ReplaceAll(string(kind), "_", " ")) + ": " + description})
}
