package report_test

import (
	"os"
	"strings"
	"testing"

	rep "github.com/seckilledge/seckill/contract/report"
)

func fenced(t *testing.T, doc, info string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "```"+info+"\n")
	if !ok {
		t.Fatalf("docs/operator.md has no %s block", info)
	}
	body, _, _ := strings.Cut(rest, "```")
	return body
}

// holds checks that the evidence of the fenced block evidenceInfo of docs/operator.md, a sale of
// 2 units, computes the canonical encoding of the block figuresInfo, as shown picks it.
func holds(t *testing.T, evidenceInfo, figuresInfo string, shown func(*rep.Report) any) {
	t.Helper()
	b, err := os.ReadFile("../../docs/operator.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	evidence := fenced(t, doc, evidenceInfo)
	want := strings.TrimSpace(fenced(t, doc, figuresInfo))
	r := &rep.Report{Figures: rep.Figures{Units: 2}}
	c := rep.Compute([]byte(evidence), 2)
	if len(c.Problems) > 0 {
		t.Fatalf("the example's evidence: %v", c.Problems)
	}
	c.Apply(r)
	got, err := rep.Canonical(shown(r))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("the doc says\n%s\nthe code computes\n%s", want, got)
	}
}

// The worked example of docs/operator.md ("The fairness report") is what Compute makes of its
// evidence, byte for byte in the canonical encoding.
func TestTheWorkedExampleOfTheReportIsTheCode(t *testing.T) {
	holds(t, "report-evidence", "report-figures", func(r *rep.Report) any {
		return struct {
			F rep.Figures      `json:"figures"`
			S []rep.SpeedClass `json:"speed_classes"`
		}{r.Figures, r.SpeedClasses}
	})
}

// The draw's worked example of docs/operator.md is what Compute makes of its evidence: the
// draw's figures and the report's, byte for byte in the canonical encoding.
func TestTheWorkedExampleOfADrawReportIsTheCode(t *testing.T) {
	holds(t, "report-draw-evidence", "report-draw-figures", func(r *rep.Report) any {
		return struct {
			D *rep.Draw   `json:"draw"`
			F rep.Figures `json:"figures"`
		}{r.Draw, r.Figures}
	})
}
