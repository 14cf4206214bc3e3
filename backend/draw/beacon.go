package draw

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckilledge/seckill/backend/lock"
	drawmath "github.com/seckilledge/seckill/contract/draw"
)

// ErrBeaconPending: the draw's entries are fixed, but its beacon round is not published yet or
// could not be fetched and checked from any endpoint. The draw stays closed and the loop tries
// again every tick; it never ranks with the bare seed instead.
var ErrBeaconPending = errors.New("waiting for the beacon round")

// Drand fetches beacon rounds over drand's HTTP API (GET {url}/{chain hash}/public/{round})
// from the first of URLs that answers a round whose signature verifies under the chain's key:
// an endpoint that is down, late or lying costs a try, not the draw.
type Drand struct {
	URLs []string
	// HTTP is the client (nil: one with a 5 s timeout per request).
	HTTP *http.Client
}

// ParseDrandURLs splits SECKILL_DRAND_URLS (comma-separated http(s) base URLs).
func ParseDrandURLs(s string) ([]string, error) {
	var out []string
	for _, u := range strings.Split(s, ",") {
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		if u == "" {
			continue
		}
		if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
			return nil, fmt.Errorf("SECKILL_DRAND_URLS: %q is not an http(s) URL", u)
		}
		out = append(out, u)
	}
	return out, nil
}

// maxRoundBody bounds a round's answer (drand's is about 250 bytes).
const maxRoundBody = 64 << 10

// Round fetches round of chain b and checks it; it returns the signature (hex) and the
// randomness. The error lists each endpoint's failure.
func (d *Drand) Round(ctx context.Context, b drawmath.Beacon, round uint64) (string, drawmath.Hash, error) {
	var errs []string
	if d == nil || len(d.URLs) == 0 {
		return "", drawmath.Hash{}, errors.New("no drand endpoint is configured (SECKILL_DRAND_URLS)")
	}
	hc := d.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	for _, base := range d.URLs {
		sig, rnd, err := fetchRound(ctx, hc, base, b, round)
		if err == nil {
			metricBeacon.WithLabelValues("fetched").Inc()
			return sig, rnd, nil
		}
		metricBeacon.WithLabelValues("failed").Inc()
		errs = append(errs, base+": "+err.Error())
		if ctx.Err() != nil {
			break
		}
	}
	return "", drawmath.Hash{}, errors.New(strings.Join(errs, "; "))
}

func fetchRound(ctx context.Context, hc *http.Client, base string, b drawmath.Beacon, round uint64) (string, drawmath.Hash, error) {
	var none drawmath.Hash
	u := base + "/" + b.ChainHash + "/public/" + strconv.FormatUint(round, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", none, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", none, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRoundBody))
	if err != nil {
		return "", none, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", none, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var got struct {
		Round      uint64 `json:"round"`
		Signature  string `json:"signature"`
		Randomness string `json:"randomness"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		return "", none, fmt.Errorf("answer: %w", err)
	}
	if got.Round != round {
		return "", none, fmt.Errorf("answered round %d, asked %d", got.Round, round)
	}
	// The signature is the proof; the endpoint's word for the randomness is checked against it.
	rnd, err := b.VerifyRound(round, got.Signature)
	if err != nil {
		return "", none, err
	}
	if got.Randomness != "" && !strings.EqualFold(got.Randomness, hex.EncodeToString(rnd[:])) {
		return "", none, errors.New("its randomness is not SHA-256 of its signature")
	}
	return strings.ToLower(got.Signature), rnd, nil
}

// beaconRow is the beacon columns of a draws row.
type beaconRow struct {
	beacon              *drawmath.Beacon
	signature, errorMsg *string
}

func readBeacon(ctx context.Context, q querier, sale string) (beaconRow, error) {
	var b beaconRow
	var rnd *string
	err := q.QueryRow(ctx, `SELECT beacon, beacon_signature, beacon_randomness, beacon_error FROM draws WHERE sale_id = $1`, sale).
		Scan(&b.beacon, &b.signature, &rnd, &b.errorMsg)
	if err != nil {
		return b, err
	}
	if b.beacon != nil && b.signature != nil {
		b.beacon.Signature = *b.signature
		if rnd != nil {
			b.beacon.Randomness = *rnd
		}
	}
	return b, nil
}

// beaconRound is the draw's beacon with its round (docs/draw.md, "A public beacon"): nil when
// the draw names none; else the round, fetched once (then kept in draws, published with the
// result) and checked under the chain's key. ErrBeaconPending while the round is not out or no
// endpoint gives a round that verifies; the reason is kept in draws.beacon_error for the
// cockpit. It runs first in the draw, so a draw that waits reads nothing else each tick.
func (r *Runner) beaconRound(ctx context.Context, sale string, held lock.Held) (*drawmath.Beacon, error) {
	row, err := readBeacon(ctx, r.Pool, sale)
	if err != nil {
		return nil, err
	}
	b := row.beacon
	if b == nil || b.Signature != "" {
		return b, nil
	}
	if due := b.RoundTime(b.Round); r.now().Before(due) {
		return nil, fmt.Errorf("%w %d: published at %s", ErrBeaconPending, b.Round, due.Format(time.RFC3339))
	}
	sig, rnd, ferr := r.Drand.Round(ctx, *b, b.Round)
	key := lock.SaleKey(sale)
	if ferr != nil {
		msg := ferr.Error()
		if len(msg) > 1000 {
			msg = msg[:1000]
		}
		err := lock.Fenced(ctx, r.Pool, key, held, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE draws SET beacon_error = $2 WHERE sale_id = $1`, sale, msg)
			return err
		})
		if err != nil {
			return nil, err
		}
		r.log().Warn("draw waits for its beacon round", "sale_id", sale, "round", b.Round, "err", msg)
		return nil, fmt.Errorf("%w %d: %s", ErrBeaconPending, b.Round, msg)
	}
	b.Signature, b.Randomness = sig, hex.EncodeToString(rnd[:])
	// Kept before the ranking: a draw resumed later ranks with the same round, whatever the
	// endpoints answer then.
	err = lock.Fenced(ctx, r.Pool, key, held, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE draws SET beacon_signature = $2, beacon_randomness = $3, beacon_error = NULL
			WHERE sale_id = $1 AND beacon_signature IS NULL`, sale, b.Signature, b.Randomness)
		return err
	})
	if err != nil {
		return nil, err
	}
	r.log().Info("draw beacon round fetched", "sale_id", sale, "round", b.Round, "randomness", b.Randomness)
	return b, nil
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
