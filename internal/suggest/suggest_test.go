package suggest

import "testing"

func TestNearestNamesWhatWasMeant(t *testing.T) {
	names := []string{"run", "demo", "version", "help"}
	for _, tt := range []struct{ word, want string }{
		{"rn", "run"},
		{"verison", "version"},
		{"DEMO", "demo"},
		{"frobnicate", ""},
	} {
		if got := Nearest(tt.word, names, 3); got != tt.want {
			t.Errorf("Nearest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
	if got := Nearest("idle_timout", []string{"spawn.idle_timeout", "idle_timeout"}, 4); got != "idle_timeout" {
		t.Errorf("the closest of two candidates: got %q", got)
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"max_trns", "max_turns", 1}} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
