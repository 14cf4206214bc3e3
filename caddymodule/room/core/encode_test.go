package core

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// AppendAnswer writes exactly what encoding/json writes, for every shape of answer: optional
// fields set or not, negative and large numbers, and strings that need escaping (which go
// through encoding/json).
func TestAppendAnswerIsByteForByteEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "waiting", "r2.k1.abc.12.def-_", "2026-12-02T00:00:00Z", "lapsed", `quo"te`, "back\\slash", "<html>", "a&b", "tab\t", "é", "\x7f"}
	nums := []int64{0, 1, -1, 42, 1 << 40, -1 << 62}
	pick := func() string { return strs[rng.IntN(len(strs))] }
	num := func() int64 { return nums[rng.IntN(len(nums))] + rng.Int64N(1000) }
	for i := range 20000 {
		a := QueueAnswer{Ticket: pick(), EntryID: pick(), State: pick(), Position: num(), Ahead: num(), EstimatedWaitS: num(),
			RefreshS: num(), AdmittedUntil: pick(), Reason: pick(), UnitsLeft: num()}
		switch i % 3 {
		case 1:
			a.EstimatedWaitRangeS = []int64{num(), num()}
		case 2:
			a.EstimatedWaitRangeS = []int64{}
		}
		want, err := json.Marshal(&a)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendAnswer([]byte("x"), &a); string(got) != "x"+string(want) {
			t.Fatalf("%+v:\n got %s\nwant x%s", a, got, want)
		}
	}
}

func FuzzAppendAnswer(f *testing.F) {
	f.Add("r2.k1.a.b.c", "waiting", "", int64(3), int64(-1))
	f.Fuzz(func(t *testing.T, ticket, state, reason string, n, m int64) {
		a := QueueAnswer{Ticket: ticket, State: state, Reason: reason, Position: n, Ahead: m, EstimatedWaitRangeS: []int64{n, m}, UnitsLeft: n ^ m}
		want, _ := json.Marshal(&a)
		if got := AppendAnswer(nil, &a); string(got) != string(want) {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
}
