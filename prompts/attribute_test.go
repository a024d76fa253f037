package prompts

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/infinite-improbability-drive/spawn/observability"
)

func TestAttributeTiesTheCodersWordsToEachFinding(t *testing.T) {
	overflow := Finding{Domain: "general_polish", File: "main.go", Line: 5, Title: "Doc comment omits overflow"}
	sum := Finding{Domain: "general_polish", File: "main.go", Line: 7, Title: "Explain the sum"}
	nested := Finding{Domain: "technical_feasibility", File: "pkg/calc/calc.go", Line: 12, Title: "Total starts from one"}
	typo := Finding{Domain: "general_polish", Title: "Typo"}
	fs := []Finding{overflow, sum, nested, typo}
	for i := range fs {
		fs[i].ID = FindingID(fs[i].Domain, fs[i].File, fs[i].Title)
	}
	overflow, sum, nested = fs[0], fs[1], fs[2]
	prose := func(f Finding, by AttributedBy, words string) Attribution {
		return Attribution{FindingID: f.ID, By: by, Words: words}
	}
	tests := []struct {
		name string
		text string
		want []Attribution
	}{
		{"prose naming each finding by file:line and title, one sentence",
			"Fixed both findings: main.go:5 (Doc comment omits overflow) now mentions overflow, and main.go:7 (Explain the sum) has a comment on the return statement.",
			[]Attribution{
				prose(overflow, ByTitle, "main.go:5 (Doc comment omits overflow) now mentions overflow"),
				prose(sum, ByTitle, "main.go:7 (Explain the sum) has a comment on the return statement"),
			}},
		{"file:line only, two sentences",
			"I updated the comment at main.go:5 so it mentions overflow. The return statement at main.go:7 now has a comment.",
			[]Attribution{
				prose(overflow, ByLocation, "I updated the comment at main.go:5 so it mentions overflow"),
				prose(sum, ByLocation, "The return statement at main.go:7 now has a comment"),
			}},
		{"a title in other case and punctuation",
			"Done. The doc-comment omits OVERFLOW no more: it says what happens on overflow.",
			[]Attribution{prose(overflow, ByTitle, "The doc-comment omits OVERFLOW no more: it says what happens on overflow")}},
		{"the id in prose, without the contract's form",
			"About " + sum.ID + ", I added a comment explaining the sum.",
			[]Attribution{prose(sum, ByID, "About "+sum.ID+", I added a comment explaining the sum")}},
		{"a file by its base name",
			"- calc.go:12 starts from zero now\n- nothing else changed",
			[]Attribution{prose(nested, ByLocation, "calc.go:12 starts from zero now")}},
		{"the contract wins over prose, prose fills in the rest",
			"main.go:7 is now commented.\n" + overflow.ID + ": declined - overflow cannot happen with int64 sums",
			[]Attribution{
				{FindingID: overflow.ID, Action: observability.CoderDeclined, Words: "overflow cannot happen with int64 sums", By: ByContract},
				prose(sum, ByLocation, "main.go:7 is now commented"),
			}},
		{"a finding named twice gets both places",
			"main.go:5 mentions overflow now. I also reworded main.go:5 for clarity.",
			[]Attribution{prose(overflow, ByLocation, "main.go:5 mentions overflow now; I also reworded main.go:5 for clarity")}},
		{"another line of the same file is not the finding",
			"main.go:50 and main.go:57 are unchanged; see main.go:5x.",
			nil},
		{"a path that only ends like the file is not the file",
			"other/xmain.go:5 was fixed.",
			nil},
		{"prose that names no finding attributes nothing",
			"Fixed everything the reviewer asked for.",
			nil},
		{"a one-word title is too common to count", "Fixed the typo.", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Attribute(tt.text, fs))
		})
	}
}

func TestAttributeNeverPanicsOnOddInput(t *testing.T) {
	f := Finding{ID: "0252ecbe891c", File: "a.go", Line: 1, Title: "x y"}
	for _, text := range []string{"", "\n\n", "a.go:1", "x y x y", "0252ecbe891c", "ÄÖÜ a.go:1 ÄÖÜ x Y.", "a.go:1 a.go:1, a.go:1"} {
		assert.NotPanics(t, func() { Attribute(text, []Finding{f, f}) }, text)
	}
	assert.Nil(t, Attribute("anything", nil))
}
