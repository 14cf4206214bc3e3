package pagetest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	"github.com/seckilledge/seckill/caddymodule/sealed"
)

// What the room's and the draw's page tests share in their stand-ins for the handlers: a
// stand-in answers the page's requests as docs/openapi.yaml says the handler answers them,
// with the answers a test sets, so a page test reaches every state without a real room or
// draw going through each; the page it serves is the handler's own, and the proof of work
// the page does is checked for real.

// Compile is kind's page (a handler's pageKind) with the page options under test (nil: our
// page), as the handler compiles it at provision.
func Compile(t *testing.T, kind pagekit.Kind, cfg *pagekit.Config) *pagekit.Kit {
	t.Helper()
	kit, err := pagekit.Compile(kind, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kit
}

// Work is the proof of work a stand-in asks of the page: the one challenge it issues, of
// Difficulty bits.
type Work struct {
	Challenge  string
	Difficulty int
}

// NewWork is a Work whose challenge's first solution lies past two slices of the client's
// worker (16 384 counters each), so that the page shows the work in progress, not only done.
func NewWork(difficulty int) Work {
	for i := 0; ; i++ {
		ch := "c1.k1." + strconv.Itoa(i) + "." + strconv.Itoa(difficulty) + ".test"
		if n, _ := strconv.Atoi(sealed.Solve(ch, difficulty)); n > 2*16384 {
			return Work{Challenge: ch, Difficulty: difficulty}
		}
	}
}

// Issue answers GET /seckill/{sale}/challenge: the challenge, for 30 seconds.
func (k Work) Issue(w http.ResponseWriter) {
	Answer(w, http.StatusOK, map[string]any{"challenge": k.Challenge, "difficulty": k.Difficulty,
		"expires_at": time.Now().Add(30 * time.Second).UTC().Format(time.RFC3339)})
}

// Solved reports whether r carries the challenge and a solution of it at its difficulty, in
// the headers the client sends them in.
func (k Work) Solved(r *http.Request) bool {
	return r.Header.Get(sealed.HeaderChallenge) == k.Challenge &&
		sealed.LeadingZeroBits(k.Challenge, r.Header.Get(sealed.HeaderSolution)) >= k.Difficulty
}

// Answer writes body as a JSON answer with status.
func Answer(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// Refuse writes the contract's refusal of code with status: {"code", "message"}, the message
// the code itself.
func Refuse(w http.ResponseWriter, status int, code string) {
	Answer(w, status, map[string]string{"code": code, "message": code})
}
