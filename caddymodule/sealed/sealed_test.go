package sealed

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testSealer(t testing.TB, ids ...string) *Sealer {
	t.Helper()
	var keys []Key
	for _, id := range ids {
		keys = append(keys, Key{ID: id, Secret: []byte("room-test-secret-0123456789abcdef-" + id)})
	}
	s, err := NewSealer(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTicketIsBoundToUserSaleAndTime(t *testing.T) {
	s := testSealer(t, "k1")
	now := time.Unix(1_800_000_000, 0)
	tk := s.Ticket("sale1", "alice", now.Add(time.Hour))
	if err := s.VerifyTicket(tk, "sale1", "alice", now); err != nil {
		t.Fatalf("own ticket refused: %v", err)
	}
	for name, err := range map[string]error{
		"other user":  s.VerifyTicket(tk, "sale1", "bob", now),
		"other sale":  s.VerifyTicket(tk, "sale2", "alice", now),
		"expired":     s.VerifyTicket(tk, "sale1", "alice", now.Add(time.Hour)),
		"other key":   testSealer(t, "k1x").VerifyTicket(tk, "sale1", "alice", now),
		"tampered":    s.VerifyTicket(tk[:len(tk)-1]+"A", "sale1", "alice", now),
		"later exp":   s.VerifyTicket(strings.Replace(tk, ".", ".", 1)+"x", "sale1", "alice", now),
		"empty":       s.VerifyTicket("", "sale1", "alice", now),
		"bad user id": s.VerifyTicket(tk, "sale1", "al ice", now),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Rotation: a ticket signed with the old key verifies while the old key is listed.
	rotated := testSealer(t, "k2", "k1")
	if err := rotated.VerifyTicket(tk, "sale1", "alice", now); err != nil {
		t.Fatalf("ticket of the previous key refused after rotation: %v", err)
	}
}

func TestChallengeRefusesForeignExpiredTooEasyAndWrongSolutions(t *testing.T) {
	s := testSealer(t, "k1")
	now := time.Unix(1_800_000_000, 0)
	ch, err := s.NewChallenge("sale1", "alice", 8, now.Add(DefaultChallengeLife))
	if err != nil {
		t.Fatal(err)
	}
	sol := Solve(ch, 8)
	got, err := s.VerifyChallenge(ch, sol, "sale1", "alice", 0, now)
	if err != nil || got.Difficulty != 8 || len(got.Nonce) != 22 {
		t.Fatalf("right solution refused: %+v %v", got, err)
	}
	wrong := sol
	for LeadingZeroBits(ch, wrong) >= 8 {
		wrong = wrong + "1"
	}
	for name, err := range map[string]error{
		"foreign user": second(s.VerifyChallenge(ch, sol, "sale1", "bob", 0, now)),
		"foreign sale": second(s.VerifyChallenge(ch, sol, "sale2", "alice", 0, now)),
		"expired":      second(s.VerifyChallenge(ch, sol, "sale1", "alice", 0, now.Add(DefaultChallengeLife))),
		"wrong":        second(s.VerifyChallenge(ch, wrong, "sale1", "alice", 0, now)),
		"below min":    second(s.VerifyChallenge(ch, sol, "sale1", "alice", 9, now)),
		"lowered":      second(s.VerifyChallenge(strings.Replace(ch, ".8.", ".0.", 1), "0", "sale1", "alice", 0, now)),
		"leading zero": second(s.VerifyChallenge(ch, "0"+sol, "sale1", "alice", 0, now)),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestDifficultyGrowsOneBitPerDoublingWithinBounds(t *testing.T) {
	cases := []struct {
		rate float64
		want int
	}{{0, 10}, {100, 10}, {150, 11}, {200, 12}, {399, 12}, {400, 13}, {1e9, 16}}
	for _, c := range cases {
		if got := Difficulty(10, 16, c.rate, 100); got != c.want {
			t.Errorf("rate %v: difficulty %d, want %d", c.rate, got, c.want)
		}
	}
	if got := Difficulty(0, 0, 1e9, 100); got != 0 {
		t.Errorf("a room without proof of work asks for %d bits", got)
	}
}

// BenchmarkProofOfWorkHash is one attempt of a solver in Go: a difficulty of d bits costs
// 2^d of them on average.
func BenchmarkProofOfWorkHash(b *testing.B) {
	ch := "c1.k1.tpbj7p.16.AAAAAAAAAAAAAAAAAAAAAA.MRsDMN-67o0yZcvIUwsrazC03WgSMhi99WWIjoQjqxs"
	for i := 0; b.Loop(); i++ {
		_ = LeadingZeroBits(ch, strconv.Itoa(i))
	}
}

// A placed ticket (r2) carries the place's index under its MAC: a client cannot move itself
// further back or forward, nor pass an r1 MAC off as an r2 one.
func TestAPlacedTicketCarriesItsIndexUnderItsSeal(t *testing.T) {
	s := testSealer(t, "k1")
	now := time.Unix(1_800_000_000, 0)
	tk := s.TicketAt("sale1", "alice", now.Add(time.Hour), 1234)
	if idx, err := s.VerifyTicketPlace(tk, "sale1", "alice", now); err != nil || idx != 1234 {
		t.Fatalf("own placed ticket: %d %v, want 1234", idx, err)
	}
	if idx, err := s.VerifyTicketPlace(s.Ticket("sale1", "alice", now.Add(time.Hour)), "sale1", "alice", now); err != nil || idx != -1 {
		t.Fatalf("an r1 ticket: %d %v, want -1 and valid", idx, err)
	}
	p := strings.Split(tk, ".")
	moved := strings.Join([]string{p[0], p[1], p[2], strconv.FormatInt(5000, 36), p[4]}, ".")
	r1mac := strings.Split(s.Ticket("sale1", "alice", now.Add(time.Hour)), ".")[3]
	for name, bad := range map[string]string{
		"moved index":    moved,
		"r1 mac as r2":   strings.Join([]string{p[0], p[1], p[2], p[3], r1mac}, "."),
		"leading zero":   strings.Join([]string{p[0], p[1], p[2], "0" + p[3], p[4]}, "."),
		"negative index": strings.Join([]string{p[0], p[1], p[2], "-1", p[4]}, "."),
		"r2 without idx": strings.Join([]string{p[0], p[1], p[2], p[4]}, "."),
	} {
		if _, err := s.VerifyTicketPlace(bad, "sale1", "alice", now); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := s.VerifyTicketPlace(tk, "sale1", "bob", now); err == nil {
		t.Error("another user's placed ticket accepted")
	}
}

// A challenge is accepted at the difficulty it was sealed with for as long as it lives, and
// refused as expired (not as invalid: the client was slow, not wrong) from its expiry on,
// whatever its age beyond. Its expiry is rounded down to the second, so it never lives
// longer than its life.
func TestALiveChallengeIsAcceptedAndAnOlderOneIsAlwaysRefusedAsExpired(t *testing.T) {
	s := testSealer(t, "k1")
	issued := time.Unix(1_800_000_000, 400_000_000)
	exp := time.Unix(issued.Add(DefaultChallengeLife).Unix(), 0)
	ch, err := s.NewChallenge("sale1", "alice", 6, exp)
	if err != nil {
		t.Fatal(err)
	}
	sol := Solve(ch, 6)
	for age := time.Duration(0); age < 2*DefaultChallengeLife; age += 100 * time.Millisecond {
		_, err := s.VerifyChallenge(ch, sol, "sale1", "alice", 2, issued.Add(age))
		switch {
		case age >= DefaultChallengeLife && !errors.Is(err, ErrChallengeExpired):
			t.Fatalf("a challenge %v old (life %v): %v, want ErrChallengeExpired", age, DefaultChallengeLife, err)
		case issued.Add(age).Before(exp) && err != nil:
			t.Fatalf("a live challenge %v old: %v", age, err)
		}
	}
	// Expired is told only for a right, genuine one: a wrong solution is invalid at any age.
	// (A wrong one for sure: "1"+sol alone meets the 2 bits one time in four, the nonce being random.)
	wrong := "1" + sol
	for i := 2; LeadingZeroBits(ch, wrong) >= 2; i++ {
		wrong = strconv.Itoa(i) + sol
	}
	if _, err := s.VerifyChallenge(ch, wrong, "sale1", "alice", 2, exp.Add(time.Hour)); !errors.Is(err, ErrInvalidChallenge) {
		t.Fatalf("a wrong solution of an expired challenge: %v, want ErrInvalidChallenge", err)
	}
	if RefusalOf(ErrChallengeExpired).Code != "challenge_expired" || RefusalOf(ErrInvalidChallenge).Code != "invalid_challenge" {
		t.Fatal("the refusals of a challenge do not carry their codes")
	}
}

func TestNetworkIsTheClientsPrefix(t *testing.T) {
	for _, c := range []struct{ ip, want string }{
		{"203.0.113.77", "203.0.113.0/24"}, {"::ffff:198.51.100.9", "198.51.100.0/24"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1::/48"}, {"fe80::1%eth0", "fe80::/48"}, {"not-an-ip", ""}, {"", ""},
	} {
		if got := Network(c.ip, 24, 48); got != c.want {
			t.Errorf("Network(%q) = %q, want %q", c.ip, got, c.want)
		}
	}
}

// A network's next challenge adds no bit below its free count, then one per doubling.
func TestNetBitsAddOneBitPerDoublingBeyondTheFreeCount(t *testing.T) {
	for _, c := range []struct{ open, free, want int }{
		{0, 500, 0}, {499, 500, 0}, {500, 500, 1}, {999, 500, 1}, {1000, 500, 2}, {1999, 500, 2},
		{2000, 500, 3}, {64000, 500, 8}, {10_000, 0, 0}, {10_000, -1, 0},
	} {
		if got := NetBits(c.open, c.free); got != c.want {
			t.Errorf("NetBits(%d, %d) = %d, want %d", c.open, c.free, got, c.want)
		}
	}
}
