package spawn

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/infinite-improbability-drive/spawn/internal/relay"
	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/runners"
	"github.com/infinite-improbability-drive/spawn/watcher"
)

// spend is what a run has spent so far, over every agent session: the
// sessions that ended and those still running (parallel reviewers). It is
// what max_cost_usd bounds (the whole run: coder and reviewers) and what
// the status line shows. Safe for concurrent use.
type spend struct {
	mu    sync.Mutex
	ended float64
	live  map[int]float64 // a running session -> its cost so far
	next  int
	shown float64 // the highest total reported: the running total never goes down
	// relayed is the cost of every answer the model relay forwarded,
	// priced from the usage it reports: what the agents spent, whether
	// their CLI or a program they ran asked.
	relayed float64
	// limits are, per seat (its name at the relay), the last answer that
	// refused it for a limit and said when the limit resets.
	limits map[string]quota
}

// quota is a provider's answer that a seat's limit is reached: when it
// resets, and the provider's words.
type quota struct {
	resetAt time.Time
	message string
	seen    time.Time
}

// relay adds an answer the relay forwarded.
func (s *spend) relay(u relay.Usage) {
	cost := u.ReportedCostUSD
	if cost == 0 {
		cost = runners.EstimateCost(u.Model, runners.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.relayed += cost
	if u.Status == http.StatusTooManyRequests && !u.ResetAt.IsZero() {
		if s.limits == nil {
			s.limits = map[string]quota{}
		}
		s.limits[u.Seat] = quota{resetAt: u.ResetAt, message: u.LimitMessage, seen: time.Now()}
	}
}

// limit is the last limit the relay saw refuse seat since forget(seat).
func (s *spend) limit(seat string) (quota, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.limits[seat]
	return q, ok
}

// forget drops what the relay saw of seat's limits: a new turn starts.
func (s *spend) forget(seat string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.limits, seat)
}

// allow is the relay's check before it forwards a request: an error once
// what it forwarded has reached limit (max_cost_usd; 0 is no limit).
func (s *spend) allow(limit float64) func() error {
	return func() error {
		if limit <= 0 {
			return nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.relayed >= limit {
			return fmt.Errorf("the run's cost budget (max_cost_usd = $%g) is spent: about $%.4f of model answers went through spawn's relay", limit, s.relayed)
		}
		return nil
	}
}

// start registers a session and returns its key and the run's cost when
// it starts: the CLIs' figures or the relay's, whichever is higher (a
// program the coder ran may have called the model around its CLI).
func (s *spend) start() (int, float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live == nil {
		s.live = map[int]float64{}
	}
	s.next++
	s.live[s.next] = 0
	return s.next, max(s.totalLocked(), s.relayed)
}

// relayedCost is what the relay has forwarded so far.
func (s *spend) relayedCost() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.relayed
}

// update sets a running session's cost so far and returns the run's
// running total to show. The total shown never goes down: a CLI's own
// price replacing spawn's estimate may lower a session's cost, and a
// running total that drops reads as a bug.
func (s *spend) update(key int, cost float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.live[key]; ok {
		s.live[key] = cost
	}
	s.shown = max(s.shown, s.totalLocked())
	return s.shown
}

// end moves a session's final cost to the ended sessions and returns the
// running total to show.
func (s *spend) end(key int, cost float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, key)
	s.ended += cost
	s.shown = max(s.shown, s.totalLocked())
	return s.shown
}

// total is the run's cost so far.
func (s *spend) total() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totalLocked()
}

func (s *spend) totalLocked() float64 {
	t := s.ended
	for _, c := range s.live {
		t += c
	}
	return t
}

// sessionBudget is the cost budget of a session that starts when the run
// has spent spent: what is left of max_cost_usd (limit), 0 when the run
// has no cost limit. ok is false when nothing is left.
func sessionBudget(limit, spent float64) (budget float64, ok bool) {
	if limit <= 0 {
		return 0, true
	}
	if spent >= limit {
		return 0, false
	}
	return limit - spent, true
}

// agentUsage is what one session used, as usage.by_agent keeps it: its
// processes' own tokens (watcher.Outcome.Usage), not their thread's
// running total.
func agentUsage(who agent, sess *watcher.Session) observability.AgentUsage {
	u := observability.AgentUsage{LLM: who.llm, Role: who.role, Iteration: who.round, Seat: who.seat}
	if sess == nil {
		return u
	}
	u.CostUSD, u.Turns = sess.CostUSD, sess.Turns
	for _, p := range sess.Processes {
		u.InputTokens += p.Usage.InputTokens
		u.OutputTokens += p.Usage.OutputTokens
	}
	return u
}

// offered is the tools of allowed that are not excluded.
func offered(allowed, excluded []string) []string {
	var out []string
	for _, t := range allowed {
		if !slices.Contains(excluded, t) {
			out = append(out, t)
		}
	}
	return out
}
