// Package drandtest is a stand-in drand beacon for tests and offline demos: it signs rounds
// with a test key (circl's BLS12-381, the scheme of drand's quicknet, contract/draw's
// SchemeUnchainedG1) and serves them over HTTP as drand's API does:
//
//	GET /{chainhash}/info            the chain's info (public_key, period, genesis_time, hash, schemeID)
//	GET /{chainhash}/public/{round}  {"round", "randomness", "signature"} once the round's time has come
//	GET /{chainhash}/public/latest   the current round
//
// A round in the future is refused with 425 Too Early, as drand's relays do; a test can also
// hold a round back (Withhold) to play a beacon that is late or down, and count the requests.
package drandtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudflare/circl/sign/bls"

	"github.com/seckilledge/seckill/contract/draw"
)

// Beacon is a stand-in chain and its HTTP server.
type Beacon struct {
	// Chain is the chain as a draw names it (no round).
	Chain draw.Beacon
	// Server serves drand's API; URL is its base.
	Server *httptest.Server
	URL    string

	key  *bls.PrivateKey[bls.KeyG2SigG1]
	mu   sync.Mutex
	held map[uint64]bool
	down bool
	// until: every round is refused before this wall time (HoldUntil).
	until time.Time
	// Requests counts the round requests answered (any status).
	Requests atomic.Int64
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// New starts a stand-in beacon whose key is derived from seed (any text: the same seed gives
// the same key and chain), with a round every period from genesis.
func New(seed string, period time.Duration, genesis time.Time) *Beacon {
	ikm := sha256.Sum256([]byte("seckill drandtest key " + seed))
	key, err := bls.KeyGen[bls.KeyG2SigG1](ikm[:], nil, nil)
	if err != nil {
		panic(err)
	}
	pub, err := key.PublicKey().MarshalBinary()
	if err != nil {
		panic(err)
	}
	hash := sha256.Sum256(append([]byte("seckill drandtest chain "), pub...))
	b := &Beacon{key: key, held: map[uint64]bool{}, Now: time.Now,
		Chain: draw.Beacon{ChainHash: hex.EncodeToString(hash[:]), PublicKey: hex.EncodeToString(pub),
			Scheme: draw.SchemeUnchainedG1, Period: max(1, int(period/time.Second)), GenesisTime: genesis.Unix()}}
	b.Server = httptest.NewServer(b)
	b.URL = b.Server.URL
	return b
}

// Close stops the server.
func (b *Beacon) Close() { b.Server.Close() }

// Sign is the chain's signature of round (hex), whether or not its time has come.
func (b *Beacon) Sign(round uint64) string {
	msg := draw.RoundMessage(round)
	return hex.EncodeToString(bls.Sign(b.key, msg[:]))
}

// Withhold makes the server refuse round (503, as a relay that has not got it) until Release.
func (b *Beacon) Withhold(round uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held[round] = true
}

// Release serves round again.
func (b *Beacon) Release(round uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, round)
}

// HoldUntil makes the server refuse every round (503) until the wall clock reaches t: a
// beacon late for whatever round a test's draw will ask.
func (b *Beacon) HoldUntil(t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.until = t
}

// SetDown makes every request fail with 502 (an endpoint that is down), or serve again.
func (b *Beacon) SetDown(down bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down = down
}

// Env is the backend's environment naming this chain and endpoint (docs/draw.md, "A public
// beacon": SECKILL_DRAND_*), with more endpoints tried first when given (a dead one, say).
func (b *Beacon) Env(before ...string) []string {
	return []string{
		"SECKILL_DRAND_URLS=" + strings.Join(append(before, b.URL), ","),
		"SECKILL_DRAND_CHAIN_HASH=" + b.Chain.ChainHash,
		"SECKILL_DRAND_PUBLIC_KEY=" + b.Chain.PublicKey,
		"SECKILL_DRAND_PERIOD=" + strconv.Itoa(b.Chain.Period),
		"SECKILL_DRAND_GENESIS=" + strconv.FormatInt(b.Chain.GenesisTime, 10),
	}
}

// ServeHTTP answers drand's API for this chain.
func (b *Beacon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	b.mu.Lock()
	down := b.down
	b.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusBadGateway)
		return
	}
	if r.Method != http.MethodGet || len(parts) < 2 || parts[0] != b.Chain.ChainHash {
		http.NotFound(w, r)
		return
	}
	switch {
	case len(parts) == 2 && parts[1] == "info":
		writeJSON(w, map[string]any{"public_key": b.Chain.PublicKey, "period": b.Chain.Period,
			"genesis_time": b.Chain.GenesisTime, "hash": b.Chain.ChainHash, "schemeID": b.Chain.Scheme,
			"metadata": map[string]string{"beaconID": "drandtest"}})
	case len(parts) == 3 && parts[1] == "public":
		b.Requests.Add(1)
		current := b.Chain.RoundAt(b.Now())
		var round uint64
		if parts[2] == "latest" {
			round = current
		} else {
			n, err := strconv.ParseUint(parts[2], 10, 64)
			if err != nil {
				http.Error(w, "bad round", http.StatusBadRequest)
				return
			}
			round = n
		}
		b.mu.Lock()
		held := b.held[round] || time.Now().Before(b.until)
		b.mu.Unlock()
		switch {
		case round == 0 || round > current:
			http.Error(w, fmt.Sprintf("round %d is in the future", round), http.StatusTooEarly)
		case held:
			http.Error(w, "round not available yet", http.StatusServiceUnavailable)
		default:
			sig := b.Sign(round)
			raw, _ := hex.DecodeString(sig)
			rnd := sha256.Sum256(raw)
			writeJSON(w, map[string]any{"round": round, "randomness": hex.EncodeToString(rnd[:]), "signature": sig})
		}
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
