package spawn

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/proc"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/spawn/config"
	"github.com/infinite-improbability-drive/spawn/spawn/fault"
	"github.com/infinite-improbability-drive/spawn/team"
)

// seatCLI is the agent CLI of one seat, as the preflight found it: its
// adapter, its binary and its settings ([runners.<name>]).
type seatCLI struct {
	adapter  runners.Adapter
	bin      string
	settings runners.Settings
}

// name is the CLI's name in configuration and messages ("codex").
func (s seatCLI) name() string { return s.adapter.Name() }

// llm is the CLI as records name it ("codex-cli").
func (s seatCLI) llm() observability.LLM { return observability.LLM(s.adapter.Record()) }

// seats are the coder and the reviewers of a run.
type seats struct {
	coder seatCLI
	// reviewers is the board, one per seat, in the configuration's order;
	// empty when the mode has no reviewer.
	reviewers []seatCLI
}

// reviewer is the board's reviewer named name (team.Reviewer.Name): its
// first one for "".
func (s seats) reviewer(name string) (seatCLI, bool) {
	for _, r := range s.reviewers {
		if name == "" || r.name() == name {
			return r, true
		}
	}
	return seatCLI{}, false
}

// all are the coder and the reviewers.
func (s seats) all() []seatCLI { return append([]seatCLI{s.coder}, s.reviewers...) }

// board is the team's board: a reviewer per seat.
func (s seats) board() []team.Reviewer {
	var out []team.Reviewer
	for _, r := range s.reviewers {
		out = append(out, team.Reviewer{Name: r.name(), LLM: r.llm()})
	}
	return out
}

// record is what the record says of the seats: each one's CLI, model and
// family.
func (s seats) record() []observability.Seat {
	out := []observability.Seat{{Role: observability.RoleCoder, LLM: s.coder.llm(), Model: s.coder.settings.Model, Family: string(s.coder.adapter.Family())}}
	for _, r := range s.reviewers {
		out = append(out, observability.Seat{Role: observability.RoleReviewer, Seat: r.name(), LLM: r.llm(), Model: r.settings.Model, Family: string(r.adapter.Family())})
	}
	return out
}

// findSeats finds the agent CLIs of the coder and, when reviewed, of the
// reviewers: each named in the registry, installed in env's PATH, and,
// when keys, with a credential for its model API in vars (the providers'
// variables). A reviewer of the coder's own model family is refused unless
// cfg wants one. Nothing is created.
func findSeats(reg runners.Registry, cfg config.Config, env []string, vars runners.Values, reviewed, keys bool) (seats, error) {
	var s seats
	var err error
	if s.coder, err = findCLI(reg, cfg, cfg.Team.Coder, env); err != nil {
		return seats{}, err
	}
	if !reviewed {
		return s, nil
	}
	for _, name := range cfg.Team.Reviewers {
		r, err := findCLI(reg, cfg, name, env)
		if err != nil {
			return seats{}, err
		}
		if r.adapter.Family() == s.coder.adapter.Family() && !cfg.Team.SameFamily {
			return seats{}, fault.Errorf(fault.KindConfig, nil, "the reviewer %s is of the coder's own model family (%s), and a model reviewing its own family's work shares its blind spots; choose a reviewer of another family (spawn-team.reviewers, or --reviewer), or set same_family = true in [spawn-team] if you want it anyway",
				r.name(), r.adapter.Family())
		}
		s.reviewers = append(s.reviewers, r)
	}
	if !keys {
		return s, nil
	}
	if err := checkCredentials(reg, s, vars); err != nil {
		return seats{}, err
	}
	return s, nil
}

// findCLI is the CLI name names, installed in the PATH of env. Its
// binary's folder is given without links (a sandbox shows the real one,
// not a link to it: agents/node_modules may be one).
func findCLI(reg runners.Registry, cfg config.Config, name string, env []string) (seatCLI, error) {
	a, err := reg.Lookup(name)
	if err != nil {
		return seatCLI{}, fault.Errorf(fault.KindConfig, err, "%v", err)
	}
	settings := cfg.Runners.Get(a.Name())
	bin, err := proc.LookPath(settings.Command, env)
	if err != nil {
		return seatCLI{}, fault.Errorf(fault.KindMissingCLI, err, "%s", missingCLI(a, settings.Command))
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(bin)); err == nil {
		bin = filepath.Join(dir, filepath.Base(bin))
	}
	return seatCLI{adapter: a, bin: bin, settings: settings}, nil
}

// checkCredentials finds, before anything is created and before the coder
// spends anything, a seat whose model API spawn holds no credential for
// (the relay adds it to each request: no agent sees it). It only refuses
// what could not work; a credential it finds may still be wrong (that is
// found when the agent runs). The error names a reviewer of another family
// whose credential is there, when there is one.
func checkCredentials(reg runners.Registry, s seats, vars runners.Values) error {
	for i, seat := range s.all() {
		p := seat.adapter.Provider()
		if p.Credential(vars) != nil {
			continue
		}
		role := "coder"
		if i > 0 {
			role = "reviewer"
		}
		hint := ""
		if role == "reviewer" {
			for _, a := range reg.Adapters() {
				if a.Family() != s.coder.adapter.Family() && a.Name() != seat.name() && a.Provider().Credential(vars) != nil {
					hint = fmt.Sprintf(", or choose a reviewer whose key you have (--reviewer %s)", a.Name())
					break
				}
			}
		}
		return fault.Errorf(fault.KindAuth, nil, "the %s (%s) has no credential: %s%s, then run again (nothing was started)", role, seat.name(), p.Missing, hint)
	}
	return nil
}

// seatName is a reviewer seat's name as its private directory and relay
// key know it: the seat's label ("all", "security", "codex/security").
func seatDir(seat string) string {
	if seat == "" {
		return "reviewer"
	}
	return "reviewer-" + strings.ReplaceAll(seat, "/", "-")
}
