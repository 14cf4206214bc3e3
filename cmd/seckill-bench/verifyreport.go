package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/seckilledge/seckill/backend/report"
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
	problems, passes := report.Verify(keysRaw, signedRaw, evidence)
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
