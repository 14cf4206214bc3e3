package backend

import (
	"strings"
	"testing"

	drawmath "github.com/seckilledge/seckill/contract/draw"
)

// The beacon's settings: none without endpoints; quicknet by default, whose built-in values a
// setting may repeat but not change; another chain needs all of its values.
func TestDrandConfigReadsTheChainAndRefusesAnIncompleteOne(t *testing.T) {
	d, b, err := Config{}.DrandConfig()
	if d != nil || b != nil || err != nil {
		t.Fatalf("no endpoint: %v %v %v", d, b, err)
	}
	d, b, err = Config{DrandURLs: "https://api.drand.sh, https://drand.cloudflare.com/"}.DrandConfig()
	if err != nil || b == nil || *b != drawmath.Quicknet || len(d.URLs) != 2 || d.URLs[1] != "https://drand.cloudflare.com" {
		t.Fatalf("quicknet by default: %+v %+v %v", d, b, err)
	}
	if _, _, err := (Config{DrandURLs: "https://api.drand.sh", DrandChainHash: drawmath.Quicknet.ChainHash, DrandPeriod: "3"}).DrandConfig(); err != nil {
		t.Fatalf("quicknet's own period repeated: %v", err)
	}
	other := strings.Repeat("ab", 32)
	for name, c := range map[string]Config{
		"a key without endpoints":       {DrandPublicKey: drawmath.Quicknet.PublicKey},
		"not a URL":                     {DrandURLs: "api.drand.sh"},
		"quicknet with another period":  {DrandURLs: "https://a", DrandPeriod: "30"},
		"another chain without its key": {DrandURLs: "https://a", DrandChainHash: other, DrandPeriod: "3", DrandGenesis: "1"},
		"another chain, a bad key":      {DrandURLs: "https://a", DrandChainHash: other, DrandPublicKey: "00", DrandPeriod: "3", DrandGenesis: "1"},
		"another chain, a bad period":   {DrandURLs: "https://a", DrandChainHash: other, DrandPublicKey: drawmath.Quicknet.PublicKey, DrandPeriod: "x", DrandGenesis: "1"},
	} {
		if _, _, err := c.DrandConfig(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	_, b, err = Config{DrandURLs: "http://127.0.0.1:9", DrandChainHash: other, DrandPublicKey: drawmath.Quicknet.PublicKey, DrandPeriod: "2", DrandGenesis: "1700000000"}.DrandConfig()
	if err != nil || b.ChainHash != other || b.Period != 2 || b.GenesisTime != 1700000000 {
		t.Fatalf("another chain: %+v %v", b, err)
	}
}
