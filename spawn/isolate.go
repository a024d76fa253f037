package spawn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/internal/relay"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/isolation"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
	"github.com/infinite-improbability-drive/spawn/spawn/sandbox"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// Default API bases the relay forwards to when the user's environment
// names none.
const (
	anthropicAPI = "https://api.anthropic.com"
	geminiAPI    = "https://generativelanguage.googleapis.com"
)

// confinement is how a run's agents are confined: the isolation the run
// got, the model relay that holds the real API keys, the agents' private
// directories and, without bubblewrap, the guard that catches changes to
// the user's repository.
type confinement struct {
	report   isolation.Report
	network  isolation.Network
	relay    *relay.Relay
	apiEnv   []string // the agents' API bases and throwaway keys
	root     string   // the agents' private directories, removed by finish
	userEnv  []string // spawn's own environment
	common   string   // the repository's .git
	admin    string   // the worktree's admin directory, .git/worktrees/<id>
	own      string   // the run's ref namespace (refs/heads/spawn/<id>/), or its one branch ref
	branch   string   // the run's branch ref
	repoTop  string   // the user's work tree
	worktree string   // the sandbox's worktree
	sockDir  string   // model-only: the directory of the relay's unix socket
	exe      string   // model-only: this binary, run as the sandbox's bridge
	// guard checks the user's repository around each agent turn when no
	// sandbox keeps it read-only; nil under bubblewrap.
	guard *isolation.Guard
	// sessions is where the coder's sessions are kept between spawn
	// processes (in the run directory); restored says they were copied
	// into this confinement's private config directory.
	sessions string
	restored bool
}

// confine sets up a run's confinement once its sandbox exists: the relay,
// the agents' private root and the guard. The caller closes it.
func confine(ctx context.Context, opts Options, report isolation.Report, sb *sandbox.Sandbox, dir runs.Paths) (c *confinement, err error) {
	id := dir.ID
	c = &confinement{report: report, network: opts.Config.Sandbox.Network, userEnv: opts.Env, repoTop: sb.Repo.Dir,
		worktree: sb.Path, branch: "refs/heads/" + sb.Branch, sessions: filepath.Join(dir.Dir, sessionsName)}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.close())
		}
	}()
	if c.common, err = sb.Repo.CommonDir(ctx); err != nil {
		return c, fmt.Errorf("find the repository's git directory: %w", err)
	}
	if c.admin, err = sb.Tree.GitDir(ctx); err != nil {
		return c, fmt.Errorf("find the worktree's git directory: %w", err)
	}
	c.own = c.branch
	if ns := "refs/heads/spawn/" + id + "/"; strings.HasPrefix(c.branch, ns) {
		c.own = ns
	}
	if report.Mode != isolation.ModeBwrap {
		// Every run's spawn/ branches are spawn's, not the user's: runs on
		// one repository make and move them while this run's agents work.
		c.guard = &isolation.Guard{Git: sb.Repo, CommonDir: c.common, Own: func(ref string) bool {
			return ref == c.branch || strings.HasPrefix(ref, "refs/heads/spawn/")
		}}
	}
	if c.root, err = os.MkdirTemp(proc.Getenv(opts.Env, "TMPDIR"), "spawn-agents-"+id+"-"); err != nil {
		return c, fmt.Errorf("create the agents' private directory: %w", err)
	}
	if err := c.startRelay(); err != nil {
		return c, err
	}
	return c, nil
}

// startRelay starts the model relay with the user's credentials and sets
// the agents' API variables to it.
func (c *confinement) startRelay() error {
	route := func(name, baseVar, def string) (relay.Route, error) {
		base := proc.Getenv(c.userEnv, baseVar)
		if base == "" {
			base = def
		}
		u, err := url.Parse(base)
		if err != nil || u.Host == "" {
			return relay.Route{}, errorf(KindConfig, err, "%s=%q is not a URL; fix it, then run again", baseVar, base)
		}
		return relay.Route{Name: name, Upstream: u}, nil
	}
	anth, err := route("anthropic", "ANTHROPIC_BASE_URL", anthropicAPI)
	if err != nil {
		return err
	}
	gem, err := route("gemini", "GOOGLE_GEMINI_BASE_URL", geminiAPI)
	if err != nil {
		return err
	}
	var keys []string
	switch {
	case proc.Getenv(c.userEnv, "ANTHROPIC_API_KEY") != "":
		anth.Credential = relay.Header{Name: "x-api-key", Value: proc.Getenv(c.userEnv, "ANTHROPIC_API_KEY")}
		keys = append(keys, "ANTHROPIC_API_KEY")
	case proc.Getenv(c.userEnv, "ANTHROPIC_AUTH_TOKEN") != "":
		anth.Credential = relay.Header{Name: "Authorization", Value: "Bearer " + proc.Getenv(c.userEnv, "ANTHROPIC_AUTH_TOKEN")}
		keys = append(keys, "ANTHROPIC_AUTH_TOKEN")
	}
	for _, k := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		if v := proc.Getenv(c.userEnv, k); v != "" {
			gem.Credential = relay.Header{Name: "x-goog-api-key", Value: v}
			keys = append(keys, "GEMINI_API_KEY")
			break
		}
	}
	r, err := relay.Start([]relay.Route{anth, gem})
	if err != nil {
		return errorf(KindInternal, err, "cannot start the model relay: %v", err)
	}
	c.relay = r
	if c.network == isolation.NetworkModelOnly {
		if err := c.serveBridge(); err != nil {
			return err
		}
	}
	c.apiEnv = []string{"ANTHROPIC_BASE_URL=" + r.URL("anthropic"), "GOOGLE_GEMINI_BASE_URL=" + r.URL("gemini")}
	for _, k := range keys {
		c.apiEnv = append(c.apiEnv, k+"="+r.Key)
	}
	return nil
}

// serveBridge serves the relay on a unix socket too, for the bridge of a
// model-only sandbox, and finds this binary, which the bridge runs as.
func (c *confinement) serveBridge() error {
	exe, err := os.Executable()
	if err != nil {
		return errorf(KindInternal, err, "cannot find spawn's own binary for the model-only network: %v", err)
	}
	// A unix socket's path has at most 107 bytes: a short directory.
	dir, err := os.MkdirTemp("", "spawn-relay-")
	if err == nil && len(dir) > 80 {
		err = errors.Join(os.Remove(dir), errors.New("too long"))
		if err == nil {
			dir, err = os.MkdirTemp("/tmp", "spawn-relay-")
		}
	}
	if err != nil {
		return errorf(KindInternal, err, "cannot create the relay's socket directory: %v", err)
	}
	c.sockDir, c.exe = dir, exe
	if err := c.relay.ServeUnix(filepath.Join(dir, "relay.sock")); err != nil {
		return errorf(KindInternal, err, "cannot serve the model relay to the sandbox: %v", err)
	}
	return nil
}

// close stops the relay, keeps the coder's sessions in the run directory
// (for spawn resume) and removes the agents' private directories.
func (c *confinement) close() error {
	var errs []error
	if c.root != "" && c.sessions != "" {
		errs = append(errs, keepSessions(filepath.Join(c.root, "coder", "config"), c.sessions, observability.NewRedactor(c.userEnv)))
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

// record is the isolation the record states.
func (c *confinement) record() *observability.Isolation {
	return &observability.Isolation{Mode: string(c.report.Mode), Network: string(c.network), Reason: c.report.Reason}
}

// private makes (if need be) and returns an agent's private directory
// under the run's root, with home/, tmp/, config/ (CLAUDE_CONFIG_DIR) and
// gocache/ in it. It lasts the run: a resumed session finds its files.
func (c *confinement) private(name string) (string, error) {
	dir := filepath.Join(c.root, name)
	for _, d := range []string{"home", "tmp", "config", "gocache"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return "", fmt.Errorf("create %s's private directory: %w", name, err)
		}
	}
	return dir, nil
}

// coder returns the coder's agent, confined, and the environment it runs
// with: no credential, a private HOME, TMPDIR, CLAUDE_CONFIG_DIR and Go
// build cache, the relay as its API. The user's claude login, if any, is
// shown to it read-only.
//
// Under bubblewrap, the coder's hooks (binds) see this binary read-only and
// the run's inbox writable.
func (c *confinement) coder(claude *runners.Claude, binds coderBinds) (watcher.Agent, []string, error) {
	dir, err := c.private("coder")
	if err != nil {
		return nil, nil, err
	}
	home, cfgDir := filepath.Join(dir, "home"), filepath.Join(dir, "config")
	if !c.restored && c.sessions != "" {
		if err := restoreSessions(c.sessions, cfgDir); err != nil {
			return nil, nil, err
		}
		c.restored = true
	}
	env := isolation.AgentEnv(c.userEnv, append([]string{
		"HOME=" + home, "TMPDIR=" + filepath.Join(dir, "tmp"), "CLAUDE_CONFIG_DIR=" + cfgDir,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"GOCACHE=" + filepath.Join(dir, "gocache"),
		// The coder's own commits never pack refs or objects: packed-refs and
		// the packs are the user's.
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
	}, c.apiEnv...)...)
	var logins []isolation.Bind
	src := proc.Getenv(c.userEnv, "CLAUDE_CONFIG_DIR")
	if src == "" {
		src = filepath.Join(proc.Getenv(c.userEnv, "HOME"), ".claude")
	}
	if login := filepath.Join(src, ".credentials.json"); fileExists(login) {
		logins = append(logins, isolation.Bind{Src: login, Dst: filepath.Join(cfgDir, ".credentials.json")})
	}
	if c.report.Mode != isolation.ModeBwrap {
		for _, l := range logins {
			if err := os.Symlink(l.Src, l.Dst); err != nil && !errors.Is(err, os.ErrExist) {
				return nil, nil, fmt.Errorf("show claude its login: %w", err)
			}
		}
		return claude, env, nil
	}
	writable := []string{filepath.Join(c.common, "objects"), c.admin, dir}
	if strings.HasSuffix(c.own, "/") {
		for _, d := range []string{filepath.Join(c.common, filepath.FromSlash(c.own)), filepath.Join(c.common, "logs", filepath.FromSlash(c.own))} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, nil, fmt.Errorf("prepare the run's ref namespace: %w", err)
			}
			writable = append(writable, d)
		}
	}
	writable = append(append(writable, c.worktree), binds.writable()...)
	spec := c.spec(env, writable, logins)
	spec.ReadOnly = append(spec.ReadOnly, binds.readOnly()...)
	return confined{Agent: claude, spec: spec, conf: c}, env, nil
}

// reviewer returns a reviewer seat's agent, confined, and its environment:
// no credential, HOME and TMPDIR in its private gemini home, the relay as
// its API. Under bubblewrap it writes nothing but that home; the user's
// gemini login files are shown read-only.
func (c *confinement) reviewer(gemini *runners.Gemini, seatHome string) (watcher.Agent, []string, error) {
	tmp := filepath.Join(seatHome, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create the reviewer's TMPDIR: %w", err)
	}
	env := isolation.AgentEnv(c.userEnv, append([]string{"HOME=" + seatHome, "TMPDIR=" + tmp,
		"XDG_CONFIG_HOME=" + filepath.Join(seatHome, ".config"), "XDG_CACHE_HOME=" + filepath.Join(seatHome, ".cache")}, c.apiEnv...)...)
	if c.report.Mode != isolation.ModeBwrap {
		return gemini, env, nil
	}
	var logins []isolation.Bind
	entries, _ := os.ReadDir(filepath.Join(seatHome, ".gemini"))
	for _, e := range entries {
		p := filepath.Join(seatHome, ".gemini", e.Name())
		if target, err := os.Readlink(p); err == nil && fileExists(target) {
			logins = append(logins, isolation.Bind{Src: target, Dst: target})
		}
	}
	return confined{Agent: gemini, spec: c.spec(env, []string{seatHome}, logins), conf: c}, env, nil
}

// spec is the bubblewrap sandbox of one agent: everything read-only, the
// user's HOME hidden (the repository and the tools on PATH shown again,
// read-only), writable only where given.
func (c *confinement) spec(env []string, writable []string, files []isolation.Bind) isolation.Spec {
	s := isolation.Spec{Bwrap: c.report.Bwrap, Writable: writable, Files: files,
		ReadOnly: []string{c.repoTop, c.common}, NoNetwork: c.network == isolation.NetworkModelOnly}
	home := filepath.Clean(proc.Getenv(c.userEnv, "HOME"))
	if home == "" || home == "/" || home == "." {
		return s
	}
	s.Hide = []string{home}
	under := func(p string) bool {
		return strings.HasPrefix(filepath.Clean(p)+"/", home+"/") && filepath.Clean(p) != home
	}
	for _, p := range filepath.SplitList(proc.Getenv(env, "PATH")) {
		if p != "" && filepath.IsAbs(p) && under(p) && fileExists(p) {
			// The directory and its parent: an npm or nvm bin/ links into lib/.
			s.ReadOnly = append(s.ReadOnly, p)
			if parent := filepath.Dir(p); under(parent) {
				s.ReadOnly = append(s.ReadOnly, parent)
			}
		}
	}
	for _, k := range []string{"GOMODCACHE", "GOROOT", "GOPATH"} {
		if p := proc.Getenv(env, k); p != "" && under(p) && fileExists(p) {
			s.ReadOnly = append(s.ReadOnly, p)
		}
	}
	return s
}

// confined is an agent whose commands run under bubblewrap.
type confined struct {
	watcher.Agent
	spec isolation.Spec
	conf *confinement
}

// Command is the agent's command for t, wrapped in bwrap (and, with the
// model-only network, in the bridge to the relay).
func (c confined) Command(t runners.Turn) (runners.Command, error) {
	cmd, err := c.Agent.Command(t)
	if err != nil {
		return cmd, err
	}
	spec := c.spec
	if c.conf.sockDir != "" {
		var argv []string
		spec, argv = isolation.Bridged(spec, c.conf.exe, filepath.Join(c.conf.sockDir, "relay.sock"), c.conf.relay.Port(),
			append([]string{cmd.Path}, cmd.Args...))
		cmd.Path, cmd.Args = argv[0], argv[1:]
	}
	return spec.Wrap(cmd), nil
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
// KindSandboxTamper *Error (the work stays on the run's branch), joined
// before turn's own error.
//
// Under bubblewrap the agents cannot write any of it, so whatever changes
// there during a turn is the user's (a commit on main, a new branch) or
// another run's: nothing is checked (four git processes fewer per turn),
// and nothing of theirs is undone. Without it, spawn cannot tell the
// user's change from an agent's; only every run's spawn/ branches are
// left alone.
func (r *run) guarded(ctx context.Context, who agent, turn func() (*watcher.Session, error)) (*watcher.Session, error) {
	r.sb.Touch() // the agent may commit, or move the branch
	if r.conf.guard == nil {
		return turn()
	}
	before, err := r.conf.guard.Take(ctx)
	if err != nil {
		return nil, errorf(KindInternal, err, "cannot snapshot the repository before %s's turn: %v", who.cli, err)
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
		r.mu.Lock()
		r.tamperN++
		id := fmt.Sprintf("sandbox-tamper-%d", r.tamperN)
		r.mu.Unlock()
		f := &observability.SecurityFinding{ID: id, Kind: observability.FindingSandboxTamper, Iteration: who.round,
			Severity: observability.SeverityCritical, File: r.sb.Repo.Dir,
			Description:    fmt.Sprintf("%s (%s) changed something outside its sandbox: %s; %s", who.cli, who.role, ch.What, state),
			Recommendation: "Do not merge the run's branch unread: an agent that touches the user's repository was probably prompt-injected. Look for the instruction in the task, the repository or the tool output.",
			Status:         observability.FindingOpen}
		r.emit(Event{Kind: EventSecurity, Round: who.round, Role: who.role, LLM: who.llm, Security: f})
		r.emit(Event{Kind: EventWarning, Text: "SANDBOX TAMPER: " + f.Description})
		tampered = append(tampered, ch.What)
	}
	var errs []error
	if len(tampered) > 0 {
		errs = append(errs, errorf(KindSandboxTamper, nil, "%s changed what is yours outside its sandbox (%s); spawn stopped the run and undid what it could; the work is kept on %s, review it before merging",
			who.cli, strings.Join(tampered, "; "), r.sb.Branch))
	}
	if err != nil {
		errs = append(errs, errorf(KindInternal, err, "cannot check the repository after %s's turn: %v", who.cli, err))
	}
	return sess, errors.Join(append(errs, turnErr)...)
}
