package report

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckilledge/seckill/contract/draw"
	rep "github.com/seckilledge/seckill/contract/report"
)

// writeDraw writes a draw sale's part of the evidence from Postgres (the draw's tables are
// what its result and entries endpoints publish): every entry fixed at the close as
// d:<entry>:<variant> in leaf order, then every wave's winners as w:<wave>:<ms>:<entry> in rank
// order. It sets the report's seed, commitment, root, proof version, beacon and the close, and
// returns the entry id of each entrant's user for the orders.
func (p *Publisher) writeDraw(ctx context.Context, s sale, r *rep.Report, ev *bytes.Buffer) (map[string]string, error) {
	var seed, commitment, root string
	var version int
	var beacon []byte
	var sig, rnd *string
	var closes time.Time
	err := p.Pool.QueryRow(ctx, `SELECT coalesce(seed, ''), coalesce(seed_commitment, ''), coalesce(entries_root, ''), proof_version,
		beacon, beacon_signature, beacon_randomness, closes_at FROM draws WHERE sale_id = $1`, s.id).
		Scan(&seed, &commitment, &root, &version, &beacon, &sig, &rnd, &closes)
	if err != nil {
		return nil, fmt.Errorf("report: read the draw: %w", err)
	}
	r.Mode = "draw"
	r.Timeline.DrawCloses = rep.FormatMS(closes.UnixMilli())
	r.Evidence.Seed, r.Evidence.Commitment, r.Evidence.EntriesRoot, r.Evidence.ProofVersion = seed, commitment, root, version
	if len(beacon) > 0 && string(beacon) != "null" {
		var b draw.Beacon
		if err := json.Unmarshal(beacon, &b); err != nil {
			return nil, fmt.Errorf("report: the draw's beacon: %w", err)
		}
		if sig != nil {
			b.Signature = *sig
		}
		if rnd != nil {
			b.Randomness = *rnd
		}
		if r.Evidence.Beacon, err = json.Marshal(b); err != nil {
			return nil, err
		}
	}
	entryOf := map[string]string{}
	rows, err := p.Pool.Query(ctx, `SELECT entry_id, variant, user_id FROM draw_entries WHERE sale_id = $1 ORDER BY idx`, s.id)
	if err != nil {
		return nil, err
	}
	var id, variant, user string
	if _, err := pgx.ForEachRow(rows, []any{&id, &variant, &user}, func() error {
		entryOf[user] = id
		ev.WriteString("d:" + id + ":" + variant + "\n")
		return nil
	}); err != nil {
		return nil, fmt.Errorf("report: read the draw's entries: %w", err)
	}
	rows, err = p.Pool.Query(ctx, `SELECT w.wave, w.at, e.entry_id FROM draw_waves w JOIN draw_entries e
			ON e.sale_id = w.sale_id AND e.variant = w.variant AND e.pos >= w.lo AND e.pos < w.hi
		WHERE w.sale_id = $1 ORDER BY w.variant, w.wave, e.pos`, s.id)
	if err != nil {
		return nil, err
	}
	var wave int
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&wave, &at, &id}, func() error {
		fmt.Fprintf(ev, "w:%d:%d:%s\n", wave, at.UnixMilli(), id)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("report: read the draw's waves: %w", err)
	}
	return entryOf, nil
}

// DrawCheck is a draw sale's check: the seed opens the commitment, the entries of the evidence
// (d: lines) open the published entries_root, and every wave's winners (w: lines) are exactly
// the next best-ranked entries of their variant by HMAC-SHA256(ranking seed, entry id) that no
// wave had made winners before, waves numbered 1, 2, ... per variant. Only the order of ranks
// is checked, not when a wave opened or how many it gave (a released unit may open a wave at
// once). The builder and the checker both run it.
func DrawCheck(r *rep.Report, c rep.Computed) rep.Result {
	var problems []string
	ev := r.Evidence
	seed, err := hex.DecodeString(ev.Seed)
	switch {
	case ev.Seed == "":
		problems = append(problems, "the draw's seed was never revealed")
	case err != nil || !draw.Opens(ev.Seed, ev.Commitment):
		problems = append(problems, fmt.Sprintf("the seed does not open the commitment %s", ev.Commitment))
	}
	entries := make([]draw.Entry, len(c.DrawEntries))
	for i, e := range c.DrawEntries {
		entries[i] = draw.Entry{ID: e.ID, Variant: e.Variant}
	}
	version := max(ev.ProofVersion, 1)
	if got := draw.RootOfVersion(version, entries); got != ev.EntriesRoot {
		problems = append(problems, fmt.Sprintf("the %d entries' root is %s, the draw published %s", len(entries), got, ev.EntriesRoot))
	}
	waves := 0
	if len(problems) == 0 {
		b, err := beaconOf(ev)
		var rankSeed []byte
		if err == nil {
			rankSeed, err = draw.RankingSeed(seed, b)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("the ranking's seed: %v", err))
		} else {
			ranking := draw.RankVariants(rankSeed, entries)
			next := map[string]int{}
			last := map[string]int64{}
			for _, w := range c.DrawWaves {
				waves++
				if w.Wave != last[w.Variant]+1 {
					problems = append(problems, fmt.Sprintf("variant %q: wave %d follows wave %d", w.Variant, w.Wave, last[w.Variant]))
				}
				last[w.Variant] = w.Wave
				ranked := ranking[w.Variant]
				for _, id := range w.Winners {
					k := next[w.Variant]
					switch {
					case k >= len(ranked):
						problems = append(problems, fmt.Sprintf("variant %q wave %d: winner %s beyond the variant's %d entries", w.Variant, w.Wave, id, len(ranked)))
					case ranked[k].ID != id:
						problems = append(problems, fmt.Sprintf("variant %q wave %d: winner %s, the next best-ranked entry is %s (position %d)", w.Variant, w.Wave, id, ranked[k].ID, k))
					}
					next[w.Variant] = k + 1
				}
			}
		}
	}
	problems = append(problems, c.Problems...)
	if len(problems) > 0 {
		if len(problems) > 5 {
			problems = append(problems[:5], fmt.Sprintf("and %d more", len(problems)-5))
		}
		return rep.Result{Result: rep.Fail, Detail: strings.Join(problems, "; ")}
	}
	seedName := "seed"
	if len(ev.Beacon) > 0 {
		seedName = "effective seed"
	}
	return rep.Result{Result: rep.Pass, Detail: fmt.Sprintf("the seed opens the commitment; %d entries open entries_root; %d waves: every winner is the next best-ranked entry of its variant by HMAC-SHA256(%s, entry_id)",
		len(entries), waves, seedName)}
}

// BeaconCheck is a draw's beacon check: not applicable to a draw that names no beacon; else the
// chain is well formed (quicknet's hash with quicknet's key), the round is exactly the first
// published after the close, and its signature verifies under the chain's key.
func BeaconCheck(r *rep.Report) rep.Result {
	b, err := beaconOf(r.Evidence)
	if err == nil && b == nil {
		return rep.Result{Result: rep.NotApplicable, Detail: "commit-reveal only: the draw names no beacon"}
	}
	if err == nil {
		err = b.ValidateChain()
	}
	if err == nil {
		err = b.CheckQuicknet()
	}
	if err == nil {
		closes, perr := time.Parse(time.RFC3339Nano, r.Timeline.DrawCloses)
		switch {
		case perr != nil:
			err = fmt.Errorf("the draw's close %q: %v", r.Timeline.DrawCloses, perr)
		case b.Round != b.DrawRound(closes):
			err = fmt.Errorf("round %d is not round %d, the first published after the close %s", b.Round, b.DrawRound(closes), r.Timeline.DrawCloses)
		}
	}
	if err == nil {
		_, err = b.VerifyRound(b.Round, b.Signature)
	}
	if err != nil {
		return rep.Result{Result: rep.Fail, Detail: err.Error()}
	}
	return rep.Result{Result: rep.Pass, Detail: fmt.Sprintf("round %d of chain %s, the first after the close, verifies under the chain's key", b.Round, b.ChainHash)}
}

func beaconOf(ev rep.EvidenceRef) (*draw.Beacon, error) {
	if len(ev.Beacon) == 0 || string(ev.Beacon) == "null" {
		return nil, nil
	}
	var b draw.Beacon
	if err := json.Unmarshal(ev.Beacon, &b); err != nil {
		return nil, fmt.Errorf("the beacon is not JSON: %w", err)
	}
	return &b, nil
}
