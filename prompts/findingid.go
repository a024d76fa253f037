package prompts

import (
	"strings"

	"github.com/infinite-improbability-drive/spawn/internal/lazy"
)

// FindingIDPrefix starts a finding id as spawn shows it to a person
// ("F-610c"): it tells a finding from a commit sha at a glance.
const FindingIDPrefix = "F-"

// minShortID is the fewest hex digits a shown finding id has.
const minShortID = 4

// ShortFindingIDs maps each of a run's finding ids (FindingID's 12 hex
// digits) to the form spawn shows: FindingIDPrefix and the shortest prefix
// of the id, at least four digits, that no other id of the run shares.
// ResolveFindingID reads that form back.
func ShortFindingIDs(ids []string) map[string]string {
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		n := minShortID
		for ; n < len(id); n++ {
			unique := true
			for _, other := range ids {
				if other != id && strings.HasPrefix(other, id[:n]) {
					unique = false
					break
				}
			}
			if unique {
				break
			}
		}
		out[id] = FindingIDPrefix + id[:min(n, len(id))]
	}
	return out
}

// shortIDRE is a finding id as a person may type it back: the shown form
// ("F-610c", any case) or the whole id.
var shortIDRE = lazy.MustCompile(`(?i)^(?:` + FindingIDPrefix + `)?([0-9a-f]{4,12})$`)

// ResolveFindingID returns the id among ids that ref names: the whole id,
// or the shown form (ShortFindingIDs), "F-" and a prefix that only one id
// has; "" when ref names none or more than one.
func ResolveFindingID(ref string, ids []string) string {
	ref = strings.TrimSpace(ref)
	m := shortIDRE.FindStringSubmatch(ref)
	if m == nil {
		return ""
	}
	prefix := strings.ToLower(m[1])
	short := !strings.EqualFold(ref, prefix) // it carried FindingIDPrefix
	found := ""
	for _, id := range ids {
		id = strings.ToLower(id)
		switch {
		case id == prefix:
			return id
		case short && strings.HasPrefix(id, prefix):
			if found != "" {
				return ""
			}
			found = id
		}
	}
	return found
}
