package report_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/backend/report"
	rep "github.com/seckilledge/seckill/contract/report"
	"github.com/seckilledge/seckill/internal/openapicheck"
)

// block is the fenced block ```info of the doc at path (relative to the repository root).
func block(t *testing.T, path, info string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```"+info+"\n")
	if !ok {
		t.Fatalf("%s has no %s block", path, info)
	}
	body, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("%s: the %s block does not end", path, info)
	}
	return body
}

// excerpt computes the report of the evidence (build) and compares the canonical encoding of
// the fields shown with the doc's JSON.
func excerpt(t *testing.T, path, evidenceInfo, reportInfo, mode string, units int64, shown func(*rep.Report) any) {
	t.Helper()
	r, want := build(t, path, evidenceInfo, reportInfo, mode, units)
	got, err := rep.Canonical(shown(r))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s says\n%s\nthe code computes\n%s", path, want, got)
	}
}

// build computes the report of the evidence block the way the builder does (Compute, Apply,
// the evidence's digest, the mode's checks) over the seed, commitment, root and proof version
// the doc's JSON block names; it returns the report and that block.
func build(t *testing.T, path, evidenceInfo, reportInfo, mode string, units int64) (*rep.Report, string) {
	t.Helper()
	evidence := []byte(block(t, path, evidenceInfo))
	want := strings.TrimSpace(block(t, path, reportInfo))
	var doc struct {
		Evidence rep.EvidenceRef `json:"evidence"`
	}
	if err := json.Unmarshal([]byte(want), &doc); err != nil {
		t.Fatalf("%s: the %s block is not JSON: %v", path, reportInfo, err)
	}
	r := &rep.Report{Version: rep.Version, Sale: "example", Mode: mode, BuiltAt: "2027-01-15T09:00:30.000Z",
		Timeline: rep.Timeline{Starts: "2027-01-15T07:59:00.000Z", Ends: "2027-01-15T09:00:00.000Z"}, Figures: rep.Figures{Units: units}}
	r.Evidence.Seed, r.Evidence.Commitment = doc.Evidence.Seed, doc.Evidence.Commitment
	r.Evidence.EntriesRoot, r.Evidence.ProofVersion = doc.Evidence.EntriesRoot, doc.Evidence.ProofVersion
	c := rep.Compute(evidence, units)
	if len(c.Problems) > 0 {
		t.Fatalf("the example's evidence: %v", c.Problems)
	}
	c.Apply(r)
	d := rep.Digest(evidence)
	r.Evidence.SHA256, r.Evidence.Lines, r.Evidence.Bytes = d.SHA256, d.Lines, d.Bytes
	switch mode {
	case "room":
		r.Checks.Permutation = report.PermutationCheck(r.Evidence.Commitment, r.Evidence.Seed, c)
		r.Checks.Beacon = rep.Result{Result: rep.NotApplicable, Detail: "a sale without a draw names no beacon"}
	case "draw":
		dc := report.DrawCheck(r, c)
		r.Checks.Draw = &dc
		r.Checks.Beacon = report.BeaconCheck(r)
		r.Checks.Permutation = rep.Result{Result: rep.NotApplicable, Detail: "a draw sale has no queue"}
		r.Timeline.DrawCloses = "2027-01-15T07:59:00.000Z"
	}
	return r, want
}

// moments are the timeline's moments the evidence gives (the start and the end are the sale's).
type moments struct {
	FirstAdmission string `json:"first_admission,omitempty"`
	LastAdmission  string `json:"last_admission,omitempty"`
	FirstOrder     string `json:"first_order,omitempty"`
	SoldOut        string `json:"sold_out,omitempty"`
}

// The waitlist's worked example of docs/room.md: a released unit offered to the next present
// waiter is an admission in the report's walk (an absent waiter passed before it), and the
// report's permutation check, figures and speed classes are what the doc's JSON says.
func TestTheWaitlistWorkedExampleOfARoomReportIsTheCode(t *testing.T) {
	excerpt(t, "docs/room.md", "waitlist-evidence", "waitlist-report", "room", 1, func(r *rep.Report) any {
		return struct {
			C struct {
				P rep.Result `json:"permutation"`
			} `json:"checks"`
			E rep.EvidenceRef  `json:"evidence"`
			F rep.Figures      `json:"figures"`
			S []rep.SpeedClass `json:"speed_classes"`
			T moments          `json:"timeline"`
		}{C: struct {
			P rep.Result `json:"permutation"`
		}{r.Checks.Permutation}, E: r.Evidence, F: r.Figures, S: r.SpeedClasses,
			T: moments{r.Timeline.FirstAdmission, r.Timeline.LastAdmission, r.Timeline.FirstOrder, r.Timeline.SoldOut}}
	})
}

// The draw's waitlist example of docs/draw.md: the raised rank is one more winner of the wave
// it raised, the draw's check passes over the example's seed and root, and the draw's figures
// and speed classes are what the doc's JSON says.
func TestTheWaitlistWorkedExampleOfADrawReportIsTheCode(t *testing.T) {
	excerpt(t, "docs/draw.md", "draw-waitlist-evidence", "draw-waitlist-report", "draw", 3, func(r *rep.Report) any {
		return struct {
			C rep.Checks       `json:"checks"`
			D *rep.Draw        `json:"draw"`
			E rep.EvidenceRef  `json:"evidence"`
			F rep.Figures      `json:"figures"`
			S []rep.SpeedClass `json:"speed_classes"`
		}{r.Checks, r.Draw, r.Evidence, r.Figures, r.SpeedClasses}
	})
}

// The reports of the two waitlist examples, whole, are the document's FairnessReport
// (docs/openapi.yaml): every field the report has is listed there, with its type; a field the
// document does not list fails.
func TestAWaitlistSalesReportIsTheOpenAPIDocumentsFairnessReport(t *testing.T) {
	doc, err := openapicheck.Default()
	if err != nil {
		t.Fatal(err)
	}
	ref := doc.T.Components.Schemas["FairnessReport"]
	if ref == nil || ref.Value == nil {
		t.Fatal("docs/openapi.yaml has no FairnessReport schema")
	}
	room, _ := build(t, "docs/room.md", "waitlist-evidence", "waitlist-report", "room", 1)
	room.Counters = map[string]int64{"admitted": 2, "cursor": 3, "waitlist": 1}
	draw, _ := build(t, "docs/draw.md", "draw-waitlist-evidence", "draw-waitlist-report", "draw", 3)
	for _, r := range []*rep.Report{room, draw} {
		b, err := rep.Canonical(r)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		if err := ref.Value.VisitJSON(v); err != nil {
			t.Errorf("the %s report is not the document's FairnessReport: %v\n%s", r.Mode, err, b)
		}
		v.(map[string]any)["figures"].(map[string]any)["unlisted"] = 1
		if err := ref.Value.VisitJSON(v); err == nil {
			t.Errorf("the %s report with a figure the document does not list passed", r.Mode)
		}
	}
}
