package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/seckilledge/seckill/backend/report"
	rep "github.com/seckilledge/seckill/contract/report"
	"github.com/seckilledge/seckill/internal/stackenv"
)

// runVerifyReport is `seckill-bench verify-report`: anyone's check of a sale's signed fairness
// report from the published data alone (docs/operator.md, "The fairness report"). It reads the
// key set, the signed report and its evidence (from a URL, or from files saved earlier), checks
// the signature against the published key, the evidence against the digest the report signs,
// recomputes every figure, speed class and moment from the evidence and redoes the
// permutation check with the revealed seed, or a draw's check (seed, entries root, every wave's
// winners the next ranks) and its beacon's.
//
//	seckill-bench verify-report -url http://127.0.0.1:8080 -sale S
//	seckill-bench verify-report -keys keys.json -report report.json -evidence evidence.txt
func runVerifyReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify-report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", stackenv.Get("SECKILL_GATEWAY", "http://127.0.0.1:8080"), "gateway (or order API) base URL")
	sale := fs.String("sale", "", "sale id (required unless the three files are given)")
	keysFile := fs.String("keys", "", "the key set, saved (offline)")
	reportFile := fs.String("report", "", "the signed report, saved (offline)")
	evidenceFile := fs.String("evidence", "", "the evidence, saved (offline)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	read := func(file, path string) ([]byte, error) {
		if file != "" {
			return os.ReadFile(file)
		}
		if *sale == "" && path != "/.well-known/seckill-report-keys" {
			return nil, fmt.Errorf("-sale (or -report and -evidence) is required")
		}
		return getBytes(ctx, *base+path)
	}
	keysRaw, err := read(*keysFile, "/.well-known/seckill-report-keys")
	if err != nil {
		return errorf(stderr, "verify-report: the keys: %v", err)
	}
	signedRaw, err := read(*reportFile, "/seckill/"+*sale+"/report")
	if err != nil {
		return errorf(stderr, "verify-report: the report: %v", err)
	}
	evidence, err := read(*evidenceFile, "/seckill/"+*sale+"/report/evidence")
	if err != nil {
		return errorf(stderr, "verify-report: the evidence: %v", err)
	}
	problems, passes := VerifyReport(keysRaw, signedRaw, evidence)
	for _, p := range passes {
		fmt.Fprintf(stdout, "PASS  %s\n", p)
	}
	for _, p := range problems {
		fmt.Fprintf(stdout, "FAIL  %s\n", p)
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}

// VerifyReport checks a signed report and its evidence against a key set: what it found wrong,
// and what it checked.
func VerifyReport(keysRaw, signedRaw, evidence []byte) (problems, passes []string) {
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
	if r.Mode == "draw" {
		problems, passes = redo("draw", report.DrawCheck(r, c), r.Checks.Draw, problems, passes)
		problems, passes = redo("beacon", report.BeaconCheck(r), &r.Checks.Beacon, problems, passes)
	}
	if r.Mode == "room" {
		got := report.PermutationCheck(r.Evidence.Commitment, r.Evidence.Seed, c)
		if got.Result != rep.Pass {
			problems = append(problems, "permutation: "+got.Detail)
		} else {
			passes = append(passes, "permutation: "+got.Detail)
		}
		if got.Result != r.Checks.Permutation.Result {
			problems = append(problems, fmt.Sprintf("the report says the permutation check is %q, it is %q", r.Checks.Permutation.Result, got.Result))
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

func getBytes(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return io.ReadAll(resp.Body)
}
