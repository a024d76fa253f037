package github

import (
	"fmt"
	"strconv"
	"strings"
)

// markerPrefix opens every hidden marker spawn puts into what it posts.
const markerPrefix = "<!-- spawn:"

// Marker identifies something spawn posted: a review (Run, Round, Seat),
// one of its inline comments (plus Finding), a reply (plus ReplyTo, the
// comment replied to). It is written as an HTML comment, hidden when
// GitHub renders the body, so a retried or resumed call can find what an
// earlier one posted, and spawn never acts on its own comments.
type Marker struct {
	Run     string
	Round   int
	Seat    string
	Finding string
	ReplyTo int64
}

// String is the marker as it appears in a body:
// <!-- spawn:run=ID round=N seat=S finding=F reply-to=C -->, with the unset
// fields left out and values stripped of spaces and "--".
func (m Marker) String() string {
	var fields []string
	add := func(k, v string) {
		if v != "" {
			fields = append(fields, k+"="+markerValue(v))
		}
	}
	add("run", m.Run)
	if m.Round != 0 {
		add("round", strconv.Itoa(m.Round))
	}
	add("seat", m.Seat)
	add("finding", m.Finding)
	if m.ReplyTo != 0 {
		add("reply-to", strconv.FormatInt(m.ReplyTo, 10))
	}
	return markerPrefix + strings.Join(fields, " ") + " -->"
}

// In reports whether body carries exactly this marker.
func (m Marker) In(body string) bool { return strings.Contains(body, m.String()) }

// Append returns body followed by the marker on a line of its own.
func (m Marker) Append(body string) string {
	body = strings.TrimRight(body, "\n")
	if body == "" {
		return m.String()
	}
	return body + "\n\n" + m.String()
}

func markerValue(v string) string {
	v = strings.Map(func(r rune) rune {
		if r <= ' ' || r == '>' || r == '<' || r == '"' || r == 0x7f {
			return '_'
		}
		return r
	}, v)
	for strings.Contains(v, "--") {
		v = strings.ReplaceAll(v, "--", "-_")
	}
	return v
}

// HasMarker reports whether body carries any of spawn's hidden markers
// (a review, comment or reply marker, or the summary markers): spawn wrote
// it, and does not act on it.
func HasMarker(body string) bool { return strings.Contains(body, markerPrefix) }

// ParseMarker reads the first Marker in body.
func ParseMarker(body string) (Marker, bool) {
	for rest := body; ; {
		i := strings.Index(rest, markerPrefix)
		if i < 0 {
			return Marker{}, false
		}
		rest = rest[i+len(markerPrefix):]
		end := strings.Index(rest, "-->")
		if end < 0 {
			return Marker{}, false
		}
		if m, ok := parseMarkerFields(strings.TrimSpace(rest[:end])); ok {
			return m, true
		}
	}
}

func parseMarkerFields(s string) (Marker, bool) {
	var m Marker
	if s == "" {
		return m, false
	}
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return Marker{}, false
		}
		var err error
		switch k {
		case "run":
			m.Run = v
		case "round":
			m.Round, err = strconv.Atoi(v)
		case "seat":
			m.Seat = v
		case "finding":
			m.Finding = v
		case "reply-to":
			m.ReplyTo, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return Marker{}, false
		}
	}
	return m, true
}

// describe names a marker in messages.
func (m Marker) describe() string {
	return fmt.Sprintf("run %s round %d seat %s", m.Run, m.Round, m.Seat)
}
