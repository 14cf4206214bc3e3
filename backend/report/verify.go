package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	rep "github.com/seckilledge/seckill/contract/report"
)

// Verify is `seckill-bench verify-report`'s check of a signed report and its evidence against a
// key set, from the published data alone: the signature by a published key, the evidence
// against the signed digest, every figure, speed class and moment recomputed from the evidence,
// and the mode's checks run again. It returns what it found wrong and what it checked.
func Verify(keysRaw, signedRaw, evidence []byte) (problems, passes []string) {
	var keys rep.KeySet
	if err := json.Unmarshal(keysRaw, &keys); err != nil {
		return []string{"the key set is not JSON: " + err.Error()}, nil
	}
	var signed rep.Signed
	if err := json.Unmarshal(signedRaw, &signed); err != nil {
		return []string{"the signed report is not JSON: " + err.Error()}, nil
	}
	r, err := rep.VerifySignature(signed, keys)
	if err != nil {
		return []string{err.Error()}, nil
	}
	passes = append(passes, fmt.Sprintf("Ed25519 signature by published key %s", signed.Signature.Kid))
	if !rep.Supported(r.Version) {
		return append(problems, fmt.Sprintf("report format version %d: this checker knows versions 1 to %d", r.Version, rep.Version)), passes
	}
	for _, k := range keys.Keys {
		if k.Kid == signed.Signature.Kid && k.Demo {
			passes = append(passes, "(the key is the demo's published key: this report proves nothing)")
		}
	}
	sum := sha256.Sum256(evidence)
	if got := hex.EncodeToString(sum[:]); got != r.Evidence.SHA256 || int64(len(evidence)) != r.Evidence.Bytes {
		problems = append(problems, fmt.Sprintf("the evidence's SHA-256 is %s (%d bytes), the report signs %s (%d bytes)", got, len(evidence), r.Evidence.SHA256, r.Evidence.Bytes))
		return problems, passes
	}
	passes = append(passes, fmt.Sprintf("evidence %s: %d lines, %d bytes", r.Evidence.SHA256[:16], r.Evidence.Lines, r.Evidence.Bytes))
	c := rep.Compute(evidence, r.Figures.Units)
	want := *r
	c.Apply(&want)
	type recomputed struct {
		F rep.Figures
		S []rep.SpeedClass
		T rep.Timeline
		D *rep.Draw
	}
	a, _ := rep.Canonical(recomputed{r.Figures, r.SpeedClasses, r.Timeline, r.Draw})
	b, _ := rep.Canonical(recomputed{want.Figures, want.SpeedClasses, want.Timeline, want.Draw})
	if !bytes.Equal(a, b) {
		problems = append(problems, fmt.Sprintf("the report's figures are not the evidence's: report %s, evidence %s", a, b))
	} else {
		passes = append(passes, fmt.Sprintf("figures, speed classes and timeline recomputed from the evidence (%d entrants, %d admitted, %d units bought)",
			r.Figures.Entrants, r.Figures.Admitted, r.Figures.Bought))
	}
	if c.Draw != nil && r.Mode != "draw" {
		problems = append(problems, fmt.Sprintf("the evidence holds a draw's entries or winners, the report's mode is %q", r.Mode))
	}
	if r.Mode == "draw" {
		problems, passes = redo("draw", DrawCheck(r, c), r.Checks.Draw, problems, passes)
		problems, passes = redo("beacon", BeaconCheck(r), &r.Checks.Beacon, problems, passes)
	}
	if r.Mode == "room" {
		got := PermutationCheck(r.Evidence.Commitment, r.Evidence.Seed, c)
		if got.Result != rep.Pass {
			problems = append(problems, "permutation: "+got.Detail)
		} else {
			passes = append(passes, "permutation: "+got.Detail)
		}
		if got.Result != r.Checks.Permutation.Result {
			problems = append(problems, fmt.Sprintf("the report says the permutation check is %q, it is %q", r.Checks.Permutation.Result, got.Result))
		}
		for _, lane := range c.Lanes {
			// Each lane's counter against its admissions in the log (docs/room.md, "Lanes").
			if n, ok := r.Lanes[lane]["admitted"]; ok && n != c.LaneAdmitted[lane] {
				problems = append(problems, fmt.Sprintf("lane %s's admitted counter is %d, its log shows %d admissions", lane, n, c.LaneAdmitted[lane]))
			}
		}
		if n, ok := r.Counters["admitted"]; ok && n != r.Figures.Admitted {
			problems = append(problems, fmt.Sprintf("the room's admitted counter is %d, its log shows %d admissions", n, r.Figures.Admitted))
		}
	}
	return problems, passes
}

// redo records a check the checker ran again: a FAIL when it fails, or when the report says
// otherwise (or does not say).
func redo(name string, got rep.Result, said *rep.Result, problems, passes []string) ([]string, []string) {
	switch got.Result {
	case rep.Fail:
		problems = append(problems, name+": "+got.Detail)
	default:
		passes = append(passes, name+": "+got.Detail)
	}
	if said == nil || said.Result != got.Result {
		s := "nothing"
		if said != nil {
			s = fmt.Sprintf("%q", said.Result)
		}
		problems = append(problems, fmt.Sprintf("the report says the %s check is %s, it is %q", name, s, got.Result))
	}
	return problems, passes
}
