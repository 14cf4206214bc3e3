package core

import (
	"net/http"
	"strings"
	"testing"
)

type testOutcome string

var testTable = NewTable(Table[testOutcome]{
	Success: "done", SuccessStatus: http.StatusAccepted, SuccessMessage: "queued", Fallback: "unavailable",
	Refusals: map[testOutcome]Refusal{
		"unavailable": Unavailable,
		"sold_out":    SoldOut,
	},
})

// The success answers its own status and message; every refusing outcome its row; an outcome
// nobody wrote a row for answers the fallback's refusal, never a success.
func TestAnOutcomeWithoutARowAnswersTheFallbacksRefusal(t *testing.T) {
	if s, m, c := testTable.Status("done"), testTable.Message("done"), testTable.Code("done"); s != http.StatusAccepted || m != "queued" || c != "" {
		t.Errorf("success: %d %q %q", s, m, c)
	}
	if r := testTable.Refusal("sold_out"); r != SoldOut || testTable.Status("sold_out") != http.StatusConflict || testTable.Code("sold_out") != "sold_out" {
		t.Errorf("sold_out: %+v", r)
	}
	for _, o := range []testOutcome{"", "sharded", "no row"} {
		if r := testTable.Refusal(o); r != Unavailable || testTable.Status(o) != http.StatusServiceUnavailable ||
			testTable.Message(o) != Unavailable.Message {
			t.Errorf("%q answers %+v, want the fallback's %+v", o, r, Unavailable)
		}
	}
}

// A table whose fallback has no row, whose success has one, or with a row that is no refusal
// is refused when the package initialises.
func TestAMistakenTableStopsAtInitialisation(t *testing.T) {
	for name, c := range map[string]struct {
		tab  Table[testOutcome]
		want string
	}{
		"fallback without a row": {Table[testOutcome]{Success: "ok", Fallback: "gone", Refusals: map[testOutcome]Refusal{"x": SoldOut}}, "fallback"},
		"success with a row":     {Table[testOutcome]{Success: "ok", Fallback: "x", Refusals: map[testOutcome]Refusal{"x": SoldOut, "ok": SoldOut}}, "success"},
		"a row with status 200":  {Table[testOutcome]{Success: "ok", Fallback: "x", Refusals: map[testOutcome]Refusal{"x": SoldOut, "y": {Status: 200, Code: "y"}}}, "status 200"},
		"a row without a code":   {Table[testOutcome]{Success: "ok", Fallback: "x", Refusals: map[testOutcome]Refusal{"x": {Status: 409}}}, `code ""`},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if p, _ := recover().(string); !strings.Contains(p, c.want) {
					t.Errorf("panic %q, want one naming %q", p, c.want)
				}
			}()
			NewTable(c.tab)
		})
	}
}
