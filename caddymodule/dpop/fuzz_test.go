package dpop_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/dpop"
	"github.com/seckilledge/seckill/caddymodule/dpop/dpoptest"
)

// FuzzCheck throws arbitrary DPoP headers (and mutations of genuine proofs) at the proof
// parser: no input may panic, pass with a key other than its own, or fail with an error that
// has no refusal code.
func FuzzCheck(f *testing.F) {
	// A fixed key: the inputs the fuzzer keeps from one run to the next were signed by it.
	k := dpoptest.FixedKey(f)
	now := time.Now()
	genuine := k.Proof(f, "POST", url, tok)
	f.Add(genuine)
	f.Add(k.Proof(f, "GET", url, ""))
	f.Add(k.SignPayload(f, []byte(`{"htm":"POST","htu":"`+url+`","iat":1e3,"jti":[1]}`)))
	f.Add(k.SignPayload(f, []byte(`null`)))
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add(strings.Repeat(".", 3))
	f.Add("")
	f.Fuzz(func(t *testing.T, proof string) {
		p, err := dpop.Check(proof, req(now))
		if err != nil {
			if _, ok := dpop.Refusal(err); !ok {
				t.Fatalf("error %v has no refusal", err)
			}
			if p != (dpop.Proof{}) {
				t.Fatalf("a refused proof gave %+v", p)
			}
			return
		}
		// Only this key ever signed a seed: anything that passes is a genuine proof by it.
		if p.JKT != k.JKT || !dpop.ValidJKT(p.JKT) {
			t.Fatalf("proof %q passed with thumbprint %s, not the key's", proof, p.JKT)
		}
		if errors.Is(err, dpop.ErrMissing) && proof != "" {
			t.Fatal("a non-empty header counted as missing")
		}
	})
}
