package sealed

import (
	"testing"
	"time"
)

// The parsers face the network: none may panic, and none may accept what the key did not
// sign.

func FuzzVerifyTicketNeverAcceptsForgeries(f *testing.F) {
	s := testSealer(f, "k1")
	now := time.Unix(1_800_000_000, 0)
	good := s.Ticket("sale1", "alice", now.Add(time.Hour))
	for _, seed := range []string{good, "", "r1", "r1...", "r1.k1.zzzzzzzzzzzzz.x", good + ".", "r1.k1.-1." + good[len(good)-43:]} {
		f.Add(seed, "sale1", "alice")
	}
	f.Fuzz(func(t *testing.T, ticket, sale, user string) {
		err := s.VerifyTicket(ticket, sale, user, now)
		if err == nil && !(ticket == good && sale == "sale1" && user == "alice") {
			t.Fatalf("accepted %q for %q/%q", ticket, sale, user)
		}
	})
}

// FuzzUnbindTicketNeverAcceptsForgeries: a bound ticket (device_binding) unwraps only with the
// thumbprint it was sealed with, for its sale and user, and only into the ticket it wraps.
func FuzzUnbindTicketNeverAcceptsForgeries(f *testing.F) {
	s := testSealer(f, "k1")
	now := time.Unix(1_800_000_000, 0)
	const jkt = "cn-I_WNMClehiVp51i_0VpOENW1upEerA8sEam5hn-s"
	inner := s.Ticket("sale1", "alice", now.Add(time.Hour))
	good := s.BindTicket(inner, "sale1", "alice", jkt)
	for _, seed := range []string{good, "b.", "b.k1..", "b.k1." + good[5:48] + ".", good + "x", "b.k2" + good[4:]} {
		f.Add(seed, "sale1", "alice", jkt)
	}
	f.Add(good, "sale1", "alice", "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
	f.Fuzz(func(t *testing.T, ticket, sale, user, key string) {
		got, err := s.UnbindTicket(ticket, sale, user, key)
		if err != nil || !TicketBound(ticket) {
			return
		}
		if ticket != good || sale != "sale1" || user != "alice" || key != jkt || got != inner {
			t.Fatalf("unwrapped %q for %q/%q with key %q into %q", ticket, sale, user, key, got)
		}
	})
}

func FuzzVerifyChallengeNeverAcceptsForgeries(f *testing.F) {
	s := testSealer(f, "k1")
	now := time.Unix(1_800_000_000, 0)
	// A fixed nonce: the fuzzing workers must all seal the same challenge.
	good := s.SealChallenge("sale1", "alice", 4, "AAAAAAAAAAAAAAAAAAAAAA", now.Add(time.Minute))
	sol := Solve(good, 4)
	for _, seed := range [][2]string{{good, sol}, {good, "0"}, {"", ""}, {"c1.k1.1.1.aaaaaaaaaaaaaaaaaaaaaa.x", "1"}, {good, "-1"}, {good, "+1"}, {good, "99999999999999999999"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, ch, solution string) {
		c, err := s.VerifyChallenge(ch, solution, "sale1", "alice", 0, now)
		if err != nil {
			return
		}
		if ch != good {
			t.Fatalf("accepted a challenge the key did not seal: %q", ch)
		}
		if LeadingZeroBits(ch, solution) < c.Difficulty || !ValidSolution(solution) {
			t.Fatalf("accepted a wrong solution %q", solution)
		}
	})
}

func FuzzValidSolutionIsCanonicalDecimal(f *testing.F) {
	for _, s := range []string{"0", "01", "18446744073709551615", "18446744073709551616", "-0", " 1", "1e3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !ValidSolution(s) {
			return
		}
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				t.Fatalf("accepted %q", s)
			}
		}
		if len(s) > 1 && s[0] == '0' {
			t.Fatalf("accepted leading zero %q", s)
		}
	})
}
