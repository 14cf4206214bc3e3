package report_test

import (
	"strings"
	"testing"

	rep "github.com/seckilledge/seckill/contract/report"
)

// A draw's evidence that cannot be the draw's own is a problem of Compute, which the draw's
// check reports: entries out of entry-id order, a winner who is no entry, a winner twice, and a
// buyer no wave reached.
func TestADrawsEvidenceOutOfOrderOrWithStrayWinnersOrBuyersHasProblems(t *testing.T) {
	for _, c := range []struct{ name, evidence, want string }{
		{"entries out of order", "d:00000002:M\nd:00000001:M\n", "not in entry-id order"},
		{"an entry twice", "d:00000001:M\nd:00000001:M\n", "not in entry-id order"},
		{"a winner who is no entry", "d:00000001:M\nw:1:1:00000009\n", "no entry of the draw"},
		{"a winner twice", "d:00000001:M\nw:1:1:00000001\nw:2:2:00000001\n", "wins twice"},
		{"a buyer no wave reached", "d:00000001:M\nd:00000002:M\nw:1:1:00000001\no:5:paid:1:00000002:\n", "00000002 holds an order but no wave"},
	} {
		got := strings.Join(rep.Compute([]byte(c.evidence), 1).Problems, "; ")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: problems %q, want one saying %q", c.name, got, c.want)
		}
	}
	if p := rep.Compute([]byte("d:00000001:M\nd:00000002:\nw:1:1:00000001\no:5:paid:1:00000001:\n"), 1).Problems; len(p) > 0 {
		t.Errorf("a true draw's evidence: %v", p)
	}
}

// A room's log may take kinds d and w one day: in a room's evidence (after its places) they
// are the log's lines, counted by kind, never a draw.
func TestARoomsLogKindsDAndWStayTheLogs(t *testing.T) {
	c := rep.Compute([]byte("q:0:AAAA\na:1:1:AAAA\nw:2:1:AAAA\nd:3:1:AAAA\n"), 1)
	if len(c.Problems) > 0 || c.Draw != nil || c.Kinds["w"] != 1 || c.Kinds["d"] != 1 {
		t.Fatalf("problems %v, draw %+v, kinds %v", c.Problems, c.Draw, c.Kinds)
	}
}
