package conformance

import (
	"bytes"
	"os"
	"testing"

	"github.com/seckilledge/seckill/internal/handlertest"

	_ "github.com/seckilledge/seckill" // the identity, and the throttle and the token whose order it checks
)

// identityAdapt holds seckill_identity's golden Caddyfiles.
const identityAdapt = "../../caddymodule/identity/testdata/adapt"

// Golden tests: caddymodule/identity/testdata/adapt/<name>.caddyfile adapts to <name>.json.
// After a deliberate change: go test ./internal/conformance -run IdentityCaddyfile -update.
func TestIdentityCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	handlertest.Golden(t, identityAdapt, false)
}

// In a plain site block the identity comes first, whatever order the block is written in:
// the throttle's user zone and the token issuer read {http.auth.user.id}.
func TestIdentityRunsBeforeTheThrottleAndTheTokenWhereverItIsWritten(t *testing.T) {
	for _, f := range []string{identityAdapt + "/full.caddyfile", identityAdapt + "/session.caddyfile"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := handlertest.Adapt(src)
		if err != nil {
			t.Fatal(err)
		}
		at := func(h string) int { return bytes.Index(got, []byte(`"handler": "`+h+`"`)) }
		identity := at("seckill_identity")
		if s := at("seckill_session"); s >= 0 && s < identity {
			identity = s
		}
		for _, later := range []string{"seckill_throttle", "seckill_token"} {
			if l := at(later); l >= 0 && (identity < 0 || l < identity) {
				t.Errorf("%s: %s is ordered before the identity:\n%s", f, later, got)
			}
		}
	}
}

// verified_cache 0 turns the cache off: the adapted JSON must say 0, not leave the field out
// (which would mean the default).
func TestVerifiedCacheZeroIsKeptByTheAdapter(t *testing.T) {
	got, _, err := handlertest.Adapt([]byte(":8080 {\n\tseckill_identity {\n\t\tkey k1 HS256 {env.S}\n\t\tverified_cache 0\n\t}\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte(`"verified_cache":0`)) && !bytes.Contains(got, []byte(`"verified_cache": 0`)) {
		t.Fatalf("verified_cache 0 lost in:\n%s", got)
	}
}

func TestIdentityCaddyfileRefusesMistakes(t *testing.T) {
	for _, body := range []string{
		"seckill_identity { nonsense 1 }",
		"seckill_identity { cookie }",
		"seckill_identity { cookie a b }",
		"seckill_identity { key k1 HS256 }",
		"seckill_identity { key k1 HS256 v extra }",
		"seckill_identity { leeway soon }",
		"seckill_identity { verified_cache }",
		"seckill_identity { verified_cache many }",
		"seckill_identity { verified_cache 1 2 }",
		"seckill_identity { lane_claim }",
		"seckill_identity { lane_claim lanes roles }",
		"seckill_identity /x extra",
		"seckill_session { nonsense 1 }",
		"seckill_session { ttl }",
		"seckill_session { max_entries many }",
		"seckill_session /x extra",
	} {
		handlertest.AdaptFails(t, ":8080 {\n"+body+"\n}\n")
	}
}
