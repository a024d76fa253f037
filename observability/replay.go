package observability

import "encoding/json"

// Cassette is a run's model traffic as its run directory keeps it: every
// request an agent made through spawn's relay and the answer it got,
// redacted and compressed.
type Cassette struct {
	// Path is the cassette's file, relative to the run directory.
	Path string `json:"path"`
	// Bytes is its size, Exchanges the requests it holds; both are known
	// once the run finished.
	Bytes     int64 `json:"bytes"`
	Exchanges int   `json:"exchanges"`
	// LimitBytes is its bound; Truncated says recording stopped there
	// (the run went on).
	LimitBytes int64 `json:"limit_bytes"`
	Truncated  bool  `json:"truncated"`
}

// Replay is what a replay of a run (spawn replay) replayed and found.
type Replay struct {
	// Of is the id of the run replayed; Cassette the cassette its answers
	// came from.
	Of       string `json:"of"`
	Cassette string `json:"cassette"`
	// Binaries are the agent CLIs the replay ran instead of the run's.
	Binaries []ReplayBinary `json:"binaries"`
	// Same is true when the replay reproduced the run: every request was
	// answered from the cassette, none was left, and the commits' trees,
	// the findings and the verdict are the run's.
	Same bool `json:"same"`
	// RequestsMatch is true when every request of the replay matched a
	// recorded one and every recorded one was asked for.
	RequestsMatch bool `json:"requests_match"`
	// Answered counts the requests answered from the cassette, Missed
	// those no recorded request matched, Unused the recorded requests no
	// request of the replay asked for.
	Answered int `json:"answered"`
	Missed   int `json:"missed"`
	Unused   int `json:"unused"`
	// OriginalTrees and Trees are the trees of the run's commits and of
	// the replay's, in order.
	OriginalTrees []string `json:"original_trees"`
	Trees         []string `json:"trees"`
	// OriginalFindings and Findings are the reviews of each, one line per
	// review: round, reviewer, seat, verdict, then each finding's id,
	// severity and status.
	OriginalFindings []string `json:"original_findings"`
	Findings         []string `json:"findings"`
	OriginalVerdict  Verdict  `json:"original_verdict"`
	// OriginalDurationMS is how long the run took: the replay's own is
	// its duration_ms.
	OriginalDurationMS int64 `json:"original_duration_ms"`
	// Differences say, one sentence each, how the replay differs; empty
	// when Same.
	Differences []string `json:"differences"`
	// Divergence is the first request of the replay no recorded request
	// matched; nil when none.
	Divergence *Divergence `json:"divergence"`
}

// ReplayBinary is an agent CLI's binary a replay ran instead of the run's.
type ReplayBinary struct {
	CLI  string `json:"cli"`
	Path string `json:"path"`
}

// Divergence is the first request of a replay that no recorded request
// matched, and the recorded request it was compared with (the seat's
// first not yet answered; "" when the cassette held no more of its):
// both normalised (what differs between any two runs replaced by
// placeholders) and laid out a JSON value a line, and their line diff.
type Divergence struct {
	Seat     string `json:"seat"`
	Route    string `json:"route"`
	Method   string `json:"method"`
	Path     string `json:"path"`
	Seq      int    `json:"seq"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	Diff     string `json:"diff"`
}

// MarshalJSON encodes the replay with every nil list as [].
func (r Replay) MarshalJSON() ([]byte, error) {
	type plain Replay
	p := plain(r)
	p.Binaries, p.OriginalTrees, p.Trees = nonNil(p.Binaries), nonNil(p.OriginalTrees), nonNil(p.Trees)
	p.OriginalFindings, p.Findings, p.Differences = nonNil(p.OriginalFindings), nonNil(p.Findings), nonNil(p.Differences)
	return json.Marshal(p)
}
