package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/backend/report"
	"github.com/seckilledge/seckill/contract/draw"
	rep "github.com/seckilledge/seckill/contract/report"
)

// signedFixture is a room sale's evidence as the publisher writes it (five pre-queued places in
// the seed's order, one arrival, three admissions with their tokens, two buyers, a refused
// order), its report built and signed as the publisher does, and the key set.
func signedFixture(t *testing.T) (keys, signed, evidence []byte, priv ed25519.PrivateKey) {
	t.Helper()
	seed := bytes.Repeat([]byte{7}, 32)
	sum := sha256.Sum256(seed)
	var pre []string
	for i := range 5 {
		pre = append(pre, base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("entry-%010d", i))))
	}
	rank := func(e string) []byte { m := hmac.New(sha256.New, seed); m.Write([]byte(e)); return m.Sum(nil) }
	sort.Slice(pre, func(i, j int) bool { return bytes.Compare(rank(pre[i]), rank(pre[j])) < 0 })
	late := base64.RawURLEncoding.EncodeToString([]byte("entry-late-00001"))
	var ev strings.Builder
	for _, e := range pre {
		ev.WriteString("q:0:" + e + "\n")
	}
	ev.WriteString("q:1:" + late + "\n")
	at := int64(1_800_000_000_000)
	for i, e := range pre[:3] {
		fmt.Fprintf(&ev, "a:%d:2:%s\n", at+int64(i), e)
	}
	fmt.Fprintf(&ev, "t:%d:%d:%s\n", at+40, at+60000, pre[0])   // a bot: 40 ms
	fmt.Fprintf(&ev, "t:%d:%d:%s\n", at+1800, at+60000, pre[1]) // a person: 1.8 s
	fmt.Fprintf(&ev, "o:%d:paid:1:%s:\n", at+50, pre[0])
	fmt.Fprintf(&ev, "o:%d:created:1:%s:\n", at+2500, pre[1])
	fmt.Fprintf(&ev, "o:%d:failed:1:%s:payment refused\n", at+3000, late)
	evidence = []byte(ev.String())
	_, priv, _ = ed25519.GenerateKey(nil)
	r := &rep.Report{Version: rep.Version, Sale: "s1", Mode: "room", BuiltAt: rep.FormatMS(at + 99000),
		Timeline: rep.Timeline{Starts: rep.FormatMS(at - 1000), Ends: rep.FormatMS(at + 60000)}, Figures: rep.Figures{Units: 2},
		Counters: map[string]int64{"admitted": 3}}
	c := rep.Compute(evidence, 2)
	c.Apply(r)
	r.Evidence = rep.Digest(evidence)
	r.Evidence.Seed, r.Evidence.Commitment = hex.EncodeToString(seed), hex.EncodeToString(sum[:])
	r.Checks.Permutation = report.PermutationCheck(r.Evidence.Commitment, r.Evidence.Seed, c)
	r.Checks.Beacon = rep.Result{Result: rep.NotApplicable}
	s, err := rep.Sign(r, priv)
	if err != nil {
		t.Fatal(err)
	}
	signed, _ = json.Marshal(s)
	pub := priv.Public().(ed25519.PublicKey)
	keys, _ = json.Marshal(rep.KeySet{Keys: []rep.Key{{Kid: rep.KidOf(pub), Alg: "Ed25519", PublicKey: base64.RawURLEncoding.EncodeToString(pub)}}})
	return keys, signed, evidence, priv
}

// unsigned is the report a signed document holds.
func unsigned(t *testing.T, signed []byte) rep.Report {
	t.Helper()
	var s rep.Signed
	var r rep.Report
	if err := json.Unmarshal(signed, &s); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(s.Report, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// wantFail asserts that the check FAILs the signed report and its evidence with a problem
// saying want.
func wantFail(t *testing.T, name string, keys, signed, evidence []byte, want string) {
	t.Helper()
	problems, _ := report.Verify(keys, signed, evidence)
	if len(problems) == 0 || !strings.Contains(strings.Join(problems, "\n"), want) {
		t.Errorf("%s: problems %v, want one saying %q", name, problems, want)
	}
}

func TestAnUntouchedReportPassesAndItsFiguresAreTheEvidences(t *testing.T) {
	keys, signed, evidence, _ := signedFixture(t)
	problems, passes := report.Verify(keys, signed, evidence)
	if len(problems) > 0 || len(passes) < 4 {
		t.Fatalf("problems %v, passes %v", problems, passes)
	}
	r := unsigned(t, signed)
	f := r.Figures
	if f.Entrants != 6 || f.PreQueued != 5 || f.Arrivals != 1 || f.Admitted != 3 || f.Buyers != 2 || f.Bought != 2 ||
		f.Refused["failed:payment refused"] != 1 || f.UnusedAdmissions != 1 || r.Timeline.SoldOut == "" {
		t.Fatalf("figures %+v timeline %+v", f, r.Timeline)
	}
	byClass := map[string]rep.SpeedClass{}
	for _, k := range r.SpeedClasses {
		byClass[k.Class] = k
	}
	if byClass["under_250ms"].SharePermille != 500 || byClass["1s_to_5s"].SharePermille != 500 || byClass["no_token"].Entrants != 1 || byClass["not_admitted"].Entrants != 3 {
		t.Fatalf("speed classes %+v", r.SpeedClasses)
	}
}

// Each alteration FAILs: a figure changed and signed again by another key, a figure changed
// under the real signature, a signature byte flipped, a line of the evidence changed, the
// evidence's order broken and the whole report re-signed by the right key (the figures still
// match, the permutation does not).
func TestAnAlteredReportFailsTheOfflineCheck(t *testing.T) {
	keys, signed, evidence, priv := signedFixture(t)
	var s rep.Signed
	_ = json.Unmarshal(signed, &s)
	r := unsigned(t, signed)
	resign := func(r rep.Report, key ed25519.PrivateKey) []byte { return signReport(t, r, key) }
	_, other, _ := ed25519.GenerateKey(nil)
	figure := r
	figure.Figures.Bought = 1
	underSig := s
	underSig.Report = bytes.Replace(s.Report, []byte(`"bought":2`), []byte(`"bought":1`), 1)
	underSigRaw, _ := json.Marshal(underSig)
	flipped := s
	sig, _ := base64.RawURLEncoding.DecodeString(s.Signature.Value)
	sig[0] ^= 1
	flipped.Signature.Value = base64.RawURLEncoding.EncodeToString(sig)
	flippedRaw, _ := json.Marshal(flipped)
	forged := bytes.Replace(evidence, []byte("o:"), []byte("x:"), 1)
	// Swap the first two pre-queue places and re-sign with the real key, as a shop that
	// controls the key might: the figures are consistent, the order is not the seed's.
	lines := strings.SplitAfter(string(evidence), "\n")
	lines[0], lines[1] = lines[1], lines[0]
	swapped := []byte(strings.Join(lines, ""))
	sw := r
	rep.Compute(swapped, 2).Apply(&sw)
	seedH, commit := sw.Evidence.Seed, sw.Evidence.Commitment
	sw.Evidence = rep.Digest(swapped)
	sw.Evidence.Seed, sw.Evidence.Commitment = seedH, commit
	for _, c := range []struct {
		name             string
		signed, evidence []byte
		want             string
	}{
		{"a figure changed, signed by another key", resign(figure, other), evidence, "no published key"},
		{"a figure changed under the signature", underSigRaw, evidence, "signature does not verify"},
		{"a signature byte flipped", flippedRaw, evidence, "signature does not verify"},
		{"the evidence altered", signed, forged, "evidence's SHA-256"},
		{"a figure changed and re-signed by the key", resign(figure, priv), evidence, "figures are not the evidence's"},
		{"the order altered and re-signed by the key", resign(sw, priv), swapped, "permutation"},
	} {
		wantFail(t, c.name, keys, c.signed, c.evidence, c.want)
	}
}

// drawFixture is docs/draw.md's worked example as a draw sale's report: entries 00000001 M,
// 00000002 L, 00000003 M, one unit of each size; 00000003 wins M's wave 1 and does not buy,
// 00000001 wins wave 2 and buys, 00000002 wins L and pays. It returns the report built and
// signed as the publisher does, its evidence, the key set and the key.
func drawFixture(t *testing.T) (r rep.Report, evidence, keys []byte, priv ed25519.PrivateKey) {
	t.Helper()
	seed, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	at := int64(1_800_000_000_000)
	evidence = []byte(fmt.Sprintf(`d:00000001:M
d:00000002:L
d:00000003:M
w:1:%d:00000002
w:1:%d:00000003
w:2:%d:00000001
o:%d:paid:1:00000002:
o:%d:created:1:00000001:
`, at, at, at+60000, at+900, at+61500))
	_, priv, _ = ed25519.GenerateKey(nil)
	r = rep.Report{Version: rep.Version, Sale: "d1", Mode: "draw", BuiltAt: rep.FormatMS(at + 999000),
		Timeline: rep.Timeline{Starts: rep.FormatMS(at), Ends: rep.FormatMS(at + 600000), DrawCloses: rep.FormatMS(at - 1000)},
		Figures:  rep.Figures{Units: 2}}
	sum := sha256.Sum256(seed)
	r.Evidence.Seed, r.Evidence.Commitment, r.Evidence.ProofVersion = hex.EncodeToString(seed), hex.EncodeToString(sum[:]), 2
	r.Evidence.EntriesRoot = "e0ebc40feed466edaf272175de49a292a6900d7fadb5e7db2458b3431fb5663c" // docs/draw.md's
	r.Checks.Permutation = rep.Result{Result: rep.NotApplicable}
	reseal(&r, evidence)
	pub := priv.Public().(ed25519.PublicKey)
	keys, _ = json.Marshal(rep.KeySet{Keys: []rep.Key{{Kid: rep.KidOf(pub), Alg: "Ed25519", PublicKey: base64.RawURLEncoding.EncodeToString(pub)}}})
	return r, evidence, keys, priv
}

// reseal does what the publisher does once the evidence is written: the figures, the digest
// and the draw's checks, all from evidence.
func reseal(r *rep.Report, evidence []byte) {
	c := rep.Compute(evidence, r.Figures.Units)
	c.Apply(r)
	d := rep.Digest(evidence)
	r.Evidence.SHA256, r.Evidence.Lines, r.Evidence.Bytes = d.SHA256, d.Lines, d.Bytes
	dc := report.DrawCheck(r, c)
	r.Checks.Draw = &dc
	r.Checks.Beacon = report.BeaconCheck(r)
}

func signReport(t *testing.T, r rep.Report, priv ed25519.PrivateKey) []byte {
	t.Helper()
	s, err := rep.Sign(&r, priv)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	return b
}

func TestAnUntouchedDrawReportPassesWithItsWavesClaimsAndExpiries(t *testing.T) {
	r, evidence, keys, priv := drawFixture(t)
	problems, passes := report.Verify(keys, signReport(t, r, priv), evidence)
	if len(problems) > 0 {
		t.Fatalf("problems %v, passes %v", problems, passes)
	}
	d := r.Draw
	if r.Checks.Draw.Result != rep.Pass || r.Checks.Beacon.Result != rep.NotApplicable || d == nil || d.Entries != 3 || d.Winners != 3 ||
		d.Claimed != 2 || d.Expired != 1 || d.Variants["M"] != (rep.DrawVariant{Entries: 2, Winners: 2, Claimed: 1, Expired: 1, Bought: 1}) ||
		len(d.Waves) != 3 || d.Waves[2] != (rep.DrawWaveFigures{Variant: "M", Wave: 2, At: rep.FormatMS(1_800_000_060_000), Winners: 1, Claimed: 1}) {
		t.Fatalf("checks %+v, draw %+v", r.Checks, d)
	}
	if !strings.Contains(strings.Join(passes, "\n"), "draw: the seed opens the commitment; 3 entries open entries_root; 3 waves") {
		t.Fatalf("passes %v", passes)
	}
}

// Each alteration of a draw's report FAILs, though the whole report is re-signed with the real
// key (a shop that controls its key): a wave's winner swapped for a worse rank, an entry dropped
// from the evidence, a figure changed, a buyer who never won.
func TestAnAlteredDrawReportFailsTheOfflineCheck(t *testing.T) {
	r, evidence, keys, priv := drawFixture(t)
	forge := func(evidence []byte) []byte {
		f := r
		f.Draw, f.Checks.Draw = nil, nil
		reseal(&f, evidence)
		f.Checks.Draw = &rep.Result{Result: rep.Pass} // the forger claims the check passed
		return signReport(t, f, priv)
	}
	swapped := bytes.Replace(evidence, []byte("w:1:1800000000000:00000003\nw:2:1800000060000:00000001"),
		[]byte("w:1:1800000000000:00000001\nw:2:1800000060000:00000003"), 1)
	dropped := bytes.Replace(evidence, []byte("d:00000003:M\n"), nil, 1)
	stray := append(bytes.Clone(evidence), "o:1800000070000:paid:1:0000000f:\n"...)
	if bytes.Equal(swapped, evidence) || bytes.Equal(dropped, evidence) {
		t.Fatal("the fixture's evidence was not altered")
	}
	plain := r
	plain.Mode, plain.Checks.Draw = "plain", nil
	figure := r
	d := *r.Draw
	d.Expired = 0
	figure.Draw = &d
	for _, c := range []struct {
		name             string
		signed, evidence []byte
		want             string
	}{
		{"a winner swapped for a worse rank", forge(swapped), swapped, "the next best-ranked entry is 00000003"},
		{"an entry dropped", forge(dropped), dropped, "entries' root is"},
		{"a figure changed", signReport(t, figure, priv), evidence, "figures are not the evidence's"},
		{"a buyer who never won", forge(stray), stray, "no wave made it a winner"},
		{"the mode changed to plain", signReport(t, plain, priv), evidence, "report's mode is \"plain\""},
	} {
		wantFail(t, c.name, keys, c.signed, c.evidence, c.want)
	}
}

// A report of format version 1 (before the draw's part) still verifies; a version this checker
// does not know FAILs.
func TestAVersionOneReportStillVerifies(t *testing.T) {
	keys, signed, evidence, priv := signedFixture(t)
	r := unsigned(t, signed)
	r.Version = 1
	if problems, _ := report.Verify(keys, signReport(t, r, priv), evidence); len(problems) > 0 {
		t.Fatalf("a version 1 report: %v", problems)
	}
	r.Version = rep.Version + 1
	if problems, _ := report.Verify(keys, signReport(t, r, priv), evidence); len(problems) == 0 || !strings.Contains(problems[0], "format version") {
		t.Fatalf("a version from the future: %v", problems)
	}
}

// beaconEntries are eight entries over sizes M (six) and L (two).
var beaconEntries = func() []draw.Entry {
	var es []draw.Entry
	for i := range 8 {
		es = append(es, draw.Entry{ID: fmt.Sprintf(draw.EntryIDFormat, i+1), Variant: []string{"M", "L"}[i%3/2]})
	}
	return es
}()

// beaconDrawEvidence is a draw of beaconEntries ranked with seed, one unit of each size: each
// size's best-ranked entry wins wave 1, M's second wins wave 2 and buys.
func beaconDrawEvidence(seed []byte) []byte {
	var ev strings.Builder
	for _, e := range beaconEntries {
		ev.WriteString("d:" + e.ID + ":" + e.Variant + "\n")
	}
	ranked := draw.RankVariants(seed, beaconEntries)
	fmt.Fprintf(&ev, "w:1:1800000000000:%s\nw:1:1800000000000:%s\nw:2:1800000060000:%s\no:1800000061500:created:1:%s:\n",
		ranked["L"][0].ID, ranked["M"][0].ID, ranked["M"][1].ID, ranked["M"][1].ID)
	return []byte(ev.String())
}

// A draw ranked with quicknet's round 123, the first after its close, passes the beacon's check
// and the draw's with the effective seed; re-signed with the real key, a draw ranked with the
// committed seed alone, a later round, or a forged signature FAILs.
func TestADrawReportsBeaconIsCheckedAndItsRankingUsesTheEffectiveSeed(t *testing.T) {
	r, _, keys, priv := drawFixture(t)
	b := quicknetRound123()
	raw, _ := json.Marshal(b)
	r.Evidence.Beacon = raw
	r.Evidence.EntriesRoot = draw.RootOf(beaconEntries)
	// Round 123 is published at genesis + 122 periods: a close 3 s before is answered by it.
	r.Timeline.DrawCloses = rep.FormatMS((b.GenesisTime + 121*int64(b.Period)) * 1000)
	seed, _ := hex.DecodeString(r.Evidence.Seed)
	effective, err := draw.RankingSeed(seed, b)
	if err != nil {
		t.Fatal(err)
	}
	good := beaconDrawEvidence(effective)
	sealed := func(r rep.Report, evidence []byte) []byte {
		r.Draw, r.Checks.Draw = nil, nil
		reseal(&r, evidence)
		r.Checks.Draw, r.Checks.Beacon = &rep.Result{Result: rep.Pass}, rep.Result{Result: rep.Pass}
		return signReport(t, r, priv)
	}
	if problems, passes := report.Verify(keys, sealed(r, good), good); len(problems) > 0 || !strings.Contains(strings.Join(passes, "\n"), "round 123") ||
		!strings.Contains(strings.Join(passes, "\n"), "effective seed") {
		t.Fatalf("a true beacon draw: problems %v, passes %v", problems, passes)
	}
	plain := beaconDrawEvidence(seed)
	later := r
	lb := *b
	lb.Round = 124
	later.Evidence.Beacon, _ = json.Marshal(lb)
	forged := r
	fb := *b
	fb.Signature = strings.Repeat("ab", 48)
	forged.Evidence.Beacon, _ = json.Marshal(fb)
	for _, c := range []struct {
		name     string
		r        rep.Report
		evidence []byte
		want     string
	}{
		{"ranked with the committed seed alone", r, plain, "the next best-ranked entry is"},
		{"a later round", later, good, "is not round 123"},
		{"a forged round signature", forged, good, "beacon"},
	} {
		if c.name == "ranked with the committed seed alone" && bytes.Equal(plain, good) {
			t.Fatal("the two seeds rank the example alike: the case proves nothing")
		}
		wantFail(t, c.name, keys, sealed(c.r, c.evidence), c.evidence, c.want)
	}
}
