package draw_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/internal/drandtest"
)

// A real round of the League of Entropy's quicknet: round 123, as
// https://api.drand.sh/52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971/public/123
// publishes it (the drand-verify crate's documentation quotes the same signature).
const (
	quicknetRound     = 123
	quicknetSignature = "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482e26cd02df835d3546d23c4b13e0dfc92"
)

func TestARealQuicknetRoundVerifiesAndGivesSHA256OfItsSignature(t *testing.T) {
	if err := draw.Quicknet.ValidateChain(); err != nil {
		t.Fatal(err)
	}
	rnd, err := draw.Quicknet.VerifyRound(quicknetRound, quicknetSignature)
	if err != nil {
		t.Fatalf("quicknet round %d: %v", quicknetRound, err)
	}
	raw, _ := hex.DecodeString(quicknetSignature)
	if want := sha256.Sum256(raw); rnd != want {
		t.Fatalf("randomness %x, want SHA-256 of the signature %x", rnd, want)
	}
}

func TestAForgedOrMisplacedBeaconSignatureFails(t *testing.T) {
	// Another round of the same chain: the signature is round 123's.
	if _, err := draw.Quicknet.VerifyRound(quicknetRound+1, quicknetSignature); !errors.Is(err, draw.ErrBeaconSignature) {
		t.Fatalf("round 124 with round 123's signature: %v", err)
	}
	// One bit flipped: either not a point of G1 or a point that does not verify.
	raw, _ := hex.DecodeString(quicknetSignature)
	for _, i := range []int{47, 20} {
		bad := append([]byte(nil), raw...)
		bad[i] ^= 1
		if _, err := draw.Quicknet.VerifyRound(quicknetRound, hex.EncodeToString(bad)); !errors.Is(err, draw.ErrBeaconSignature) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	// A signature made with a key that is not the chain's (a forger's: the stand-in beacon's).
	forger := drandtest.New("forger", 3*time.Second, time.Unix(draw.Quicknet.GenesisTime, 0))
	defer forger.Close()
	if _, err := draw.Quicknet.VerifyRound(quicknetRound, forger.Sign(quicknetRound)); !errors.Is(err, draw.ErrBeaconSignature) {
		t.Fatalf("a forger's signature of round 123: %v", err)
	}
	// The right signature checked against another chain's key.
	other := draw.Quicknet
	other.PublicKey = forger.Chain.PublicKey
	if _, err := other.VerifyRound(quicknetRound, quicknetSignature); !errors.Is(err, draw.ErrBeaconSignature) {
		t.Fatalf("quicknet's signature under another chain's key: %v", err)
	}
	// And the forger's own signature does verify under its own key: the check is not always false.
	if _, err := forger.Chain.VerifyRound(quicknetRound, forger.Sign(quicknetRound)); err != nil {
		t.Fatalf("the stand-in's signature under its own key: %v", err)
	}
	for _, sig := range []string{"", "zz", quicknetSignature[:94], quicknetSignature + "00"} {
		if _, err := draw.Quicknet.VerifyRound(quicknetRound, sig); err == nil {
			t.Fatalf("signature %q verified", sig)
		}
	}
}

func TestABadChainIsRefused(t *testing.T) {
	cases := map[string]func(*draw.Beacon){
		"short hash":     func(b *draw.Beacon) { b.ChainHash = b.ChainHash[:10] },
		"upper hash":     func(b *draw.Beacon) { b.ChainHash = strings.ToUpper(b.ChainHash) },
		"short key":      func(b *draw.Beacon) { b.PublicKey = b.PublicKey[:96] },
		"key off curve":  func(b *draw.Beacon) { b.PublicKey = "a0" + strings.Repeat("11", 95) },
		"chained scheme": func(b *draw.Beacon) { b.Scheme = "pedersen-bls-chained" },
		"no period":      func(b *draw.Beacon) { b.Period = 0 },
		"no genesis":     func(b *draw.Beacon) { b.GenesisTime = 0 },
	}
	for name, change := range cases {
		b := draw.Quicknet
		change(&b)
		if err := b.ValidateChain(); !errors.Is(err, draw.ErrBeaconChain) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestTheRoundAfterACloseIsPublishedAfterIt(t *testing.T) {
	b := draw.Quicknet
	genesis := time.Unix(b.GenesisTime, 0)
	if got := b.RoundAt(genesis.Add(-time.Second)); got != 0 {
		t.Fatalf("round before genesis %d", got)
	}
	if got := b.RoundAfter(genesis.Add(-time.Hour)); got != 1 {
		t.Fatalf("round after a time before genesis %d, want 1", got)
	}
	for _, d := range []time.Duration{0, time.Second, 2999 * time.Millisecond, 3 * time.Second, 10*time.Hour + 7*time.Second} {
		at := genesis.Add(d)
		r := b.RoundAfter(at)
		if !b.RoundTime(r).After(at) {
			t.Fatalf("close %v: round %d is published at %v, not after", d, r, b.RoundTime(r))
		}
		if r > 1 && b.RoundTime(r-1).After(at) {
			t.Fatalf("close %v: round %d is not the first after it (round %d is at %v)", d, r, r-1, b.RoundTime(r-1))
		}
	}
	// Round 123 was published 122 periods after genesis.
	if got := b.RoundTime(quicknetRound); got.Unix() != b.GenesisTime+122*3 {
		t.Fatalf("round 123 at %v", got)
	}
}

func TestTheEffectiveSeedIsTheDocumentedHMAC(t *testing.T) {
	seed, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	rnd, err := draw.Quicknet.VerifyRound(quicknetRound, quicknetSignature)
	if err != nil {
		t.Fatal(err)
	}
	got, err := draw.EffectiveSeed(seed, draw.Quicknet.ChainHash, quicknetRound, rnd)
	if err != nil {
		t.Fatal(err)
	}
	// docs/draw.md's construction, written out byte by byte.
	ch, _ := hex.DecodeString(draw.Quicknet.ChainHash)
	msg := append([]byte("seckill-draw-seed-v1"), ch...)
	msg = append(msg, 0, 0, 0, 0, 0, 0, 0, quicknetRound)
	msg = append(msg, rnd[:]...)
	m := hmac.New(sha256.New, seed)
	m.Write(msg)
	if want := m.Sum(nil); !hmac.Equal(got, want) {
		t.Fatalf("effective seed %x, want %x", got, want)
	}
	// Every input moves it.
	other, _ := draw.EffectiveSeed(seed, draw.Quicknet.ChainHash, quicknetRound+1, rnd)
	if hmac.Equal(got, other) {
		t.Fatal("another round gives the same seed")
	}
	b := draw.Quicknet
	b.Round, b.Signature = quicknetRound, quicknetSignature
	rs, err := draw.RankingSeed(seed, &b)
	if err != nil || !hmac.Equal(rs, got) {
		t.Fatalf("RankingSeed %x %v, want the effective seed", rs, err)
	}
	if rs, _ := draw.RankingSeed(seed, nil); !hmac.Equal(rs, seed) {
		t.Fatal("without a beacon the ranking seed is not the committed seed")
	}
	b.Randomness = strings.Repeat("00", 32)
	if _, err := draw.RankingSeed(seed, &b); err == nil {
		t.Fatal("a published randomness that is not SHA-256 of the signature passed")
	}
	b.Randomness, b.Round = "", quicknetRound+1
	if _, err := draw.RankingSeed(seed, &b); !errors.Is(err, draw.ErrBeaconSignature) {
		t.Fatalf("a beacon naming another round: %v", err)
	}
}

// A round's answer comes from the network (a drand endpoint, a published result): whatever its
// round and signature, the check never panics, and only quicknet's own signature of round 123
// verifies as round 123.
func FuzzVerifyRoundAcceptsOnlyTheChainsSignature(f *testing.F) {
	raw, _ := hex.DecodeString(quicknetSignature)
	f.Add(uint64(quicknetRound), raw)
	f.Add(uint64(quicknetRound+1), raw)
	f.Add(uint64(0), []byte{})
	f.Add(uint64(1), make([]byte, 48))
	inf := make([]byte, 48)
	inf[0] = 0xc0 // the point at infinity, compressed
	f.Add(uint64(quicknetRound), inf)
	f.Fuzz(func(t *testing.T, round uint64, sig []byte) {
		rnd, err := draw.Quicknet.VerifyRound(round, hex.EncodeToString(sig))
		if err != nil {
			return
		}
		if round != quicknetRound || hex.EncodeToString(sig) != quicknetSignature || rnd != sha256.Sum256(sig) {
			t.Fatalf("round %d, signature %x verified", round, sig)
		}
	})
}
