//go:build integration

package sales

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/backend/lock"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/draw"
	"github.com/seckilledge/seckill/internal/drandtest"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A draw names its beacon at creation: the backend's chain by default, the spec's when it names
// one, none with {"off": true}; the round is the first after closes_at, and a beacon the backend
// could never fetch (no endpoint) or a malformed chain is 400.
func TestADrawNamesItsBeaconAtCreation(t *testing.T) {
	t.Parallel()
	pool := backendtest.DB(t)
	rdb := testenv.Redis(t)
	s := &Sales{Pool: pool, Redis: rdb, Locker: lock.NewLocker(rdb, 10*time.Second), Log: slog.New(slog.DiscardHandler)}
	post := func(id, beacon string) (int, string) {
		rec := httptest.NewRecorder()
		spec := `"opens_at":"2029-12-31T00:00:00Z","closes_at":"2030-01-01T00:00:00Z","claim_within":"10m"`
		if beacon != "" {
			spec += `,"beacon":` + beacon
		}
		s.HandleCreateSale(rec, httptest.NewRequest(http.MethodPost, "/admin/sales", strings.NewReader(
			`{"id":"`+id+`","stock":5,"starts_at":"2030-01-02T00:00:00Z","ends_at":"2030-01-03T00:00:00Z","draw":{`+spec+`}}`)))
		return rec.Code, rec.Body.String()
	}
	beaconOf := func(id string) *draw.Beacon {
		t.Helper()
		st, err := s.SaleStatus(t.Context(), id)
		if err != nil || st.Draw == nil {
			t.Fatalf("status of %s: %v", id, err)
		}
		if st.Draw.Beacon == nil {
			return nil
		}
		b := BeaconOf(st.Draw.Beacon)
		return &b
	}
	closes := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	quicknet, _ := json.Marshal(map[string]any{"chain_hash": draw.Quicknet.ChainHash, "public_key": draw.Quicknet.PublicKey,
		"period": draw.Quicknet.Period, "genesis_time": draw.Quicknet.GenesisTime})

	// No chain on the backend, none in the spec: commit-reveal only.
	id := testenv.ID("b")
	if code, body := post(id, ""); code != http.StatusCreated || beaconOf(id) != nil {
		t.Fatalf("a draw without a beacon: %d %s", code, body)
	}
	// A chain in the spec, but no endpoint to fetch its rounds from: refused.
	if code, body := post(testenv.ID("b"), string(quicknet)); code != http.StatusBadRequest || !strings.Contains(body, "SECKILL_DRAND_URLS") {
		t.Fatalf("a chain without endpoints: %d %s", code, body)
	}
	s.DrandEndpoints = true
	id = testenv.ID("b")
	if code, body := post(id, string(quicknet)); code != http.StatusCreated {
		t.Fatalf("a chain in the spec: %d %s", code, body)
	}
	b := beaconOf(id)
	if b == nil || b.ChainHash != draw.Quicknet.ChainHash || b.Round != draw.Quicknet.RoundAfter(closes) || !b.RoundTime(b.Round).After(closes) {
		t.Fatalf("the spec's chain: %+v", b)
	}
	// The backend's default chain, and "off" that drops it.
	other := draw.Quicknet
	other.GenesisTime += 1
	s.Beacon = &other
	id = testenv.ID("b")
	if code, _ := post(id, ""); code != http.StatusCreated || beaconOf(id) == nil || beaconOf(id).GenesisTime != other.GenesisTime {
		t.Fatalf("the backend's chain is not named: %+v", beaconOf(id))
	}
	id = testenv.ID("b")
	if code, _ := post(id, `{"off":true}`); code != http.StatusCreated || beaconOf(id) != nil {
		t.Fatalf("off: %+v", beaconOf(id))
	}
	for _, bad := range []string{
		`{"off":true,"period":3}`,
		`{"chain_hash":"` + draw.Quicknet.ChainHash + `"}`,
		strings.Replace(string(quicknet), `"period":3`, `"period":3,"round":5`, 1),
		strings.Replace(string(quicknet), draw.Quicknet.PublicKey[:10], "0000000000", 1),
		strings.Replace(string(quicknet), `"period":3`, `"period":3,"scheme":"pedersen-bls-chained"`, 1),
		`{"chain_hash":1}`,
	} {
		if code, body := post(testenv.ID("b"), bad); code != http.StatusBadRequest || !strings.Contains(body, contract.CodeBadRequest) || !strings.Contains(body, "draw") {
			t.Errorf("beacon %s: %d %s, want 400 naming draw.beacon", bad, code, body)
		}
	}
}

// Quicknet's chain hash names the League of Entropy's chain: its key, period and genesis are
// known. A spec that gives the hash with another key (a chain whose rounds the shop signs
// itself, passed off as quicknet) or another period or genesis (rounds at other times, one
// maybe out before the entries) is refused at creation, 400 beacon_chain_mismatch.
func TestADrawRefusesQuicknetsChainHashWithAnotherChainsValues(t *testing.T) {
	t.Parallel()
	pool := backendtest.DB(t)
	rdb := testenv.Redis(t)
	s := &Sales{Pool: pool, Redis: rdb, Locker: lock.NewLocker(rdb, 10*time.Second), Log: slog.New(slog.DiscardHandler), DrandEndpoints: true}
	stand := drandtest.New("a chain passed off as quicknet", 3*time.Second, time.Unix(draw.Quicknet.GenesisTime, 0))
	defer stand.Close()
	post := func(b draw.Beacon) (int, string) {
		beacon, _ := json.Marshal(map[string]any{"chain_hash": b.ChainHash, "public_key": b.PublicKey, "period": b.Period, "genesis_time": b.GenesisTime})
		rec := httptest.NewRecorder()
		s.HandleCreateSale(rec, httptest.NewRequest(http.MethodPost, "/admin/sales", strings.NewReader(
			`{"id":"`+testenv.ID("b")+`","stock":5,"starts_at":"2030-01-02T00:00:00Z","ends_at":"2030-01-03T00:00:00Z","draw":{`+
				`"opens_at":"2029-12-31T00:00:00Z","closes_at":"2030-01-01T00:00:00Z","claim_within":"10m","beacon":`+string(beacon)+`}}`)))
		var out struct{ Code string }
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out.Code
	}
	if code, refusal := post(draw.Quicknet); code != http.StatusCreated {
		t.Fatalf("quicknet itself: %d %s", code, refusal)
	}
	key := draw.Quicknet
	key.PublicKey = stand.Chain.PublicKey // a valid key, another chain's
	period := draw.Quicknet
	period.Period = 30
	genesis := draw.Quicknet
	genesis.GenesisTime -= 3 * 86400
	for name, b := range map[string]draw.Beacon{"another public key": key, "another period": period, "another genesis": genesis} {
		if code, refusal := post(b); code != http.StatusBadRequest || refusal != "beacon_chain_mismatch" {
			t.Errorf("quicknet's chain hash with %s: %d %q, want 400 beacon_chain_mismatch", name, code, refusal)
		}
	}
	// Another chain's hash with that key is another chain: taken (verify-draw says to check it).
	other := key
	other.ChainHash = stand.Chain.ChainHash
	if code, refusal := post(other); code != http.StatusCreated {
		t.Fatalf("another chain: %d %s", code, refusal)
	}
}
