package report

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The evidence is the data a report is computed from, published beside it
// (GET /seckill/{sale}/report/evidence) and bound into it by its SHA-256. It is text, one
// record a line, each line ended by "\n", user ids replaced by the room's public entry ids:
//
//	q:<seq>:<entry>                           the queue's places in the queue's order: seq 0 is
//	                                          the pre-queue (ranked by the seed), 1, 2, ... the
//	                                          arrivals after the start
//	q:<seq>:<entry>:<lane>                    the same in a room with lanes: each lane's queue
//	                                          in its order, lane after lane (docs/room.md,
//	                                          "Lanes"); every admission is then the next place
//	                                          of its own lane
//	<k>:<ms>:<n>:<entry>                      the room's log in Redis order (docs/room.md): a
//	                                          admitted (n: the stock seen), l left, s passed
//	                                          absent, r revoked (banned), n no-show, h hold,
//	                                          t token (n: the admission's end), p pause (entry
//	                                          "-"); a kind added later passes through as it is
//	d:<entry>:<variant>                       a draw's entries as fixed at its close, in
//	                                          entry-id order (the leaves of entries_root)
//	w:<wave>:<ms>:<entry>                     a draw's winners: each wave of each variant
//	                                          (opened at ms), its winners in rank order
//	o:<ms>:<status>:<qty>:<entry>:<reason>    the sale's orders by acceptance: status created,
//	                                          paid, cancelled or failed; qty units
//
// The queue first, then the log, then the orders; a draw's entries and waves stand where a
// room's queue and log do. A d: line after a place, or a w: line before any entry, is a line
// of the room's log. A draw's entry ids are public already (docs/draw.md); its orders name
// their buyer by his entry id.

// Computed is what the evidence says: the report's figures (all but Units, which the sale
// states), its speed classes, its moments and the pre-queue.
type Computed struct {
	Figures      Figures
	SpeedClasses []SpeedClass
	// Moments, Unix ms (0: did not happen).
	FirstAdmission, LastAdmission, FirstOrder, SoldOut int64
	// Prequeue is the pre-queue's entry ids in the queue's order.
	Prequeue []string
	// LanePrequeues is each lane's pre-queue in its order, and Lanes the lanes in the
	// evidence's order (a room with lanes; Prequeue is then empty).
	LanePrequeues map[string][]string
	Lanes         []string
	// LaneAdmitted counts each lane's admissions (a room with lanes).
	LaneAdmitted map[string]int64
	// Kinds counts the log's lines by kind (a kind the computation does not know is counted
	// here only).
	Kinds map[string]int64
	// Problems: lines that do not parse, admissions out of the queue's order, and a draw's
	// entries out of order, unknown winners, winners twice and buyers who did not win.
	Problems []string
	// A draw's entries (in the evidence's order) and waves, for the draw's check; Draw its
	// figures (nil: the evidence has no draw).
	DrawEntries []DrawEntry
	DrawWaves   []DrawWave
	Draw        *Draw
}

// DrawEntry is one entry fixed at a draw's close.
type DrawEntry struct{ ID, Variant string }

// DrawWave is one wave of one variant: its number, when it opened (Unix ms) and its winners
// in rank order.
type DrawWave struct {
	Variant string
	Wave    int64
	AtMS    int64
	Winners []string
}

// Draw is a draw sale's figures.
type Draw struct {
	Entries int64 `json:"entries"` // entries fixed at the close
	Winners int64 `json:"winners"` // entries some wave made winners
	Claimed int64 `json:"claimed"` // winners holding an order (created or paid)
	Expired int64 `json:"expired"` // winners without one: their claim window passed
	// Variants: the same per variant, with the units bought.
	Variants map[string]DrawVariant `json:"variants"`
	// Waves: each wave of each variant, in the evidence's order.
	Waves []DrawWaveFigures `json:"waves"`
}

// DrawVariant is one variant's part of a draw's figures.
type DrawVariant struct {
	Entries int64 `json:"entries"`
	Winners int64 `json:"winners"`
	Claimed int64 `json:"claimed"`
	Expired int64 `json:"expired"`
	Bought  int64 `json:"bought"` // units held by the orders of the variant's entries
}

// DrawWaveFigures is one wave's figures.
type DrawWaveFigures struct {
	Variant string `json:"variant"`
	Wave    int64  `json:"wave"`
	At      string `json:"at"`
	Winners int64  `json:"winners"`
	Claimed int64  `json:"claimed"`
}

type entrant struct {
	admitted int64 // first admission, ms (0: never)
	token    int64 // first token at or after it, ms (0: none)
	buyer    bool
	units    int64
	// A draw's entrant: his variant (entered), the moment his wave opened (won, 0: never won)
	// and his first order at or after it (ordered).
	variant      string
	entered      bool
	won, ordered int64
}

// Compute reads the evidence. units is the sale's stock at its start (for the sold-out moment).
func Compute(evidence []byte, units int64) Computed {
	c := Computed{Kinds: map[string]int64{}, Figures: Figures{Units: units, Refused: map[string]int64{}}}
	index := map[string]int32{}
	var ents []entrant
	get := func(e string) *entrant {
		i, ok := index[e]
		if !ok {
			i = int32(len(ents))
			index[e] = i
			ents = append(ents, entrant{})
		}
		return &ents[i]
	}
	// Each lane's queue and how far the walk went in it ("" is the queue of a room without
	// lanes); laneOf is an entry's lane.
	queues := map[string][]string{}
	walked := map[string]int{}
	laneOf := map[string]string{}
	places := 0
	passed := map[string]bool{}
	var held int64
	problem := func(format string, args ...any) {
		if len(c.Problems) < 20 {
			c.Problems = append(c.Problems, fmt.Sprintf(format, args...))
		}
	}
	for n := 1; len(evidence) > 0; n++ {
		i := bytes.IndexByte(evidence, '\n')
		if i < 0 {
			problem("line %d has no end of line", n)
			break
		}
		line := string(evidence[:i])
		evidence = evidence[i+1:]
		kind, rest, _ := firstWord(line)
		// A draw's lines are d: before any place and w: after its entries; elsewhere those
		// letters are kinds of the room's log.
		record := kind
		if (kind == "d" && places > 0) || (kind == "w" && len(c.DrawEntries) == 0) {
			record = "log"
		}
		switch record {
		case "q":
			seq, entry, ok := strings.Cut(rest, ":")
			entry, lane, laned := strings.Cut(entry, ":")
			s, err := strconv.ParseInt(seq, 10, 64)
			if !ok || err != nil || entry == "" || s < 0 || (laned && (lane == "" || strings.Contains(lane, ":"))) {
				problem("line %d: %q is not a place", n, line)
				continue
			}
			if _, dup := laneOf[entry]; dup {
				problem("%s has two places", entry)
			}
			get(entry)
			places++
			laneOf[entry] = lane
			if _, seen := queues[lane]; !seen && laned {
				c.Lanes = append(c.Lanes, lane)
			}
			queues[lane] = append(queues[lane], entry)
			if s == 0 {
				if laned {
					if c.LanePrequeues == nil {
						c.LanePrequeues = map[string][]string{}
					}
					c.LanePrequeues[lane] = append(c.LanePrequeues[lane], entry)
				} else {
					c.Prequeue = append(c.Prequeue, entry)
				}
				c.Figures.PreQueued++
			} else {
				c.Figures.Arrivals++
			}
		case "d":
			entry, variant, ok := strings.Cut(rest, ":")
			if !ok || entry == "" || strings.Contains(variant, ":") {
				problem("line %d: %q is not a draw entry", n, line)
				continue
			}
			if k := len(c.DrawEntries); k > 0 && c.DrawEntries[k-1].ID >= entry {
				problem("draw entry %s is not after %s: the entries are not in entry-id order", entry, c.DrawEntries[k-1].ID)
			}
			e := get(entry)
			e.entered, e.variant = true, variant
			c.DrawEntries = append(c.DrawEntries, DrawEntry{ID: entry, Variant: variant})
		case "w":
			parts := strings.SplitN(rest, ":", 3)
			if len(parts) != 3 || parts[2] == "" {
				problem("line %d: %q is not a draw winner", n, line)
				continue
			}
			wave, err1 := strconv.ParseInt(parts[0], 10, 64)
			ms, err2 := strconv.ParseInt(parts[1], 10, 64)
			if err1 != nil || err2 != nil || wave < 1 {
				problem("line %d: %q is not a draw winner", n, line)
				continue
			}
			e := get(parts[2])
			if !e.entered {
				problem("winner %s of wave %d is no entry of the draw", parts[2], wave)
			}
			if e.won != 0 {
				problem("%s wins twice", parts[2])
			} else {
				e.won = ms
			}
			k := len(c.DrawWaves)
			if k == 0 || c.DrawWaves[k-1].Variant != e.variant || c.DrawWaves[k-1].Wave != wave || c.DrawWaves[k-1].AtMS != ms {
				c.DrawWaves = append(c.DrawWaves, DrawWave{Variant: e.variant, Wave: wave, AtMS: ms})
				k++
			}
			c.DrawWaves[k-1].Winners = append(c.DrawWaves[k-1].Winners, parts[2])
		case "o":
			parts := strings.SplitN(rest, ":", 5)
			if len(parts) != 5 {
				problem("line %d: %q is not an order", n, line)
				continue
			}
			ms, err1 := strconv.ParseInt(parts[0], 10, 64)
			qty, err2 := strconv.ParseInt(parts[2], 10, 64)
			if err1 != nil || err2 != nil || qty < 1 || parts[3] == "" {
				problem("line %d: %q is not an order", n, line)
				continue
			}
			e := get(parts[3])
			if c.FirstOrder == 0 || ms < c.FirstOrder {
				c.FirstOrder = ms
			}
			if e.won != 0 && e.ordered == 0 && ms >= e.won {
				e.ordered = ms
			}
			switch parts[1] {
			case "created", "paid":
				if !e.buyer {
					c.Figures.Buyers++
				}
				e.buyer = true
				e.units += qty
				c.Figures.Bought += qty
				held += qty
				if c.SoldOut == 0 && units > 0 && held >= units {
					c.SoldOut = ms
				}
			case "cancelled", "failed":
				reason := parts[1]
				if parts[4] != "" {
					reason += ":" + parts[4]
				}
				c.Figures.Refused[reason]++
			default:
				problem("line %d: order status %q", n, parts[1])
			}
		default:
			parts := strings.SplitN(rest, ":", 3)
			if len(kind) != 1 || len(parts) != 3 || parts[2] == "" {
				problem("line %d: %q is not a log entry", n, line)
				continue
			}
			ms, err1 := strconv.ParseInt(parts[0], 10, 64)
			_, err2 := strconv.ParseInt(parts[1], 10, 64)
			if err1 != nil || err2 != nil {
				problem("line %d: %q is not a log entry", n, line)
				continue
			}
			c.Kinds[kind]++
			entry := parts[2]
			switch kind {
			case "a":
				c.Figures.Admitted++
				if c.FirstAdmission == 0 {
					c.FirstAdmission = ms
				}
				c.LastAdmission = ms
				e := get(entry)
				if e.admitted == 0 {
					e.admitted = ms
				}
				// The walk: an admission is the next place of the queue (of its lane), or the
				// return of a waiter passed while absent (docs/room.md, "Admission").
				lane := laneOf[entry]
				queue := queues[lane]
				if len(c.Lanes) > 0 {
					if c.LaneAdmitted == nil {
						c.LaneAdmitted = map[string]int64{}
					}
					c.LaneAdmitted[lane]++
				}
				switch {
				case passed[entry]:
					delete(passed, entry)
				case walked[lane] < len(queue) && queue[walked[lane]] == entry:
					walked[lane]++
				default:
					problem("admission of %s at %d is neither the queue's next place nor a passed waiter's return", entry, ms)
				}
			case "s":
				c.Figures.Passed++
				get(entry)
				lane := laneOf[entry]
				if queue := queues[lane]; walked[lane] < len(queue) && queue[walked[lane]] == entry {
					walked[lane]++
					passed[entry] = true
				} else {
					problem("%s passed at %d is not the queue's next place", entry, ms)
				}
			case "f":
				// A flagged waiter's place, passed for good (docs/room.md, "The queue bots
				// never leave").
				get(entry)
				lane := laneOf[entry]
				if queue := queues[lane]; walked[lane] < len(queue) && queue[walked[lane]] == entry {
					walked[lane]++
				} else {
					problem("%s passed (flagged) at %d is not the queue's next place", entry, ms)
				}
			case "l":
				c.Figures.Left++
				get(entry)
			case "r":
				c.Figures.Banned++
			case "n":
				c.Figures.NoShows++
			case "t":
				c.Figures.Tokens++
				e := get(entry)
				if e.admitted != 0 && e.token == 0 && ms >= e.admitted {
					e.token = ms
				}
			}
		}
	}
	c.Figures.Entrants = int64(len(ents))
	classes := make(map[string]*SpeedClass, len(Classes))
	for _, name := range Classes {
		classes[name] = &SpeedClass{Class: name}
	}
	for i := range ents {
		e := &ents[i]
		var name string
		switch {
		case e.admitted == 0 && e.won != 0 && e.ordered == 0:
			name = "no_token"
		case e.admitted == 0 && e.won != 0:
			// A draw has no turns and no tokens: a winner's reaction is from his wave's
			// opening to his order.
			name = ClassOf(e.ordered - e.won)
		case e.admitted == 0:
			name = "not_admitted"
		case e.token == 0:
			name = "no_token"
		default:
			name = ClassOf(e.token - e.admitted)
		}
		if e.admitted != 0 && !e.buyer {
			c.Figures.UnusedAdmissions++
		}
		k := classes[name]
		k.Entrants++
		if e.buyer {
			k.Buyers++
			k.Units += e.units
		}
	}
	if len(c.DrawEntries) > 0 || len(c.DrawWaves) > 0 {
		c.Draw = drawFigures(&c, index, ents, problem)
	}
	for _, name := range Classes {
		k := classes[name]
		if c.Figures.Bought > 0 {
			k.SharePermille = k.Units * 1000 / c.Figures.Bought
		}
		if k.Entrants > 0 {
			k.WinPermille = k.Buyers * 1000 / k.Entrants
		}
		c.SpeedClasses = append(c.SpeedClasses, *k)
	}
	return c
}

// drawFigures counts a draw's entries, winners, claims and expiries, per variant and per wave,
// and says which buyers no wave made winners.
func drawFigures(c *Computed, index map[string]int32, ents []entrant, problem func(string, ...any)) *Draw {
	d := &Draw{Variants: map[string]DrawVariant{}, Waves: []DrawWaveFigures{}}
	for _, de := range c.DrawEntries {
		v := d.Variants[de.Variant]
		v.Entries++
		d.Variants[de.Variant] = v
		d.Entries++
	}
	for _, w := range c.DrawWaves {
		f := DrawWaveFigures{Variant: w.Variant, Wave: w.Wave, At: FormatMS(w.AtMS), Winners: int64(len(w.Winners))}
		v := d.Variants[w.Variant]
		for _, id := range w.Winners {
			if ents[index[id]].buyer {
				f.Claimed++
			}
		}
		v.Winners += f.Winners
		v.Claimed += f.Claimed
		v.Expired += f.Winners - f.Claimed
		d.Variants[w.Variant] = v
		d.Winners += f.Winners
		d.Claimed += f.Claimed
		d.Expired += f.Winners - f.Claimed
		d.Waves = append(d.Waves, f)
	}
	var strays []string
	for id, i := range index {
		e := &ents[i]
		if !e.buyer {
			continue
		}
		if e.won == 0 {
			strays = append(strays, id)
		}
		if e.entered {
			v := d.Variants[e.variant]
			v.Bought += e.units
			d.Variants[e.variant] = v
		}
	}
	sort.Strings(strays)
	for _, id := range strays {
		problem("%s holds an order but no wave made it a winner", id)
	}
	return d
}

func timeOfMS(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// Apply writes what the evidence computes into r: the figures (keeping r's Units), the speed
// classes and the timeline's moments. The builder applies it; the checker compares a report
// with a copy it applied to itself.
func (c Computed) Apply(r *Report) {
	c.Figures.Units = r.Figures.Units
	r.Figures = c.Figures
	r.SpeedClasses = c.SpeedClasses
	r.Timeline.FirstAdmission = FormatMS(c.FirstAdmission)
	r.Timeline.LastAdmission = FormatMS(c.LastAdmission)
	r.Timeline.FirstOrder = FormatMS(c.FirstOrder)
	r.Timeline.SoldOut = FormatMS(c.SoldOut)
	r.Draw = c.Draw
}
