package report

import (
	"bytes"
	"fmt"
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
//	<k>:<ms>:<n>:<entry>                      the room's log in Redis order (docs/room.md): a
//	                                          admitted (n: the stock seen), l left, s passed
//	                                          absent, r revoked (banned), n no-show, h hold,
//	                                          t token (n: the admission's end), p pause (entry
//	                                          "-"); a kind added later passes through as it is
//	o:<ms>:<status>:<qty>:<entry>:<reason>    the sale's orders by acceptance: status created,
//	                                          paid, cancelled or failed; qty units
//
// The queue first, then the log, then the orders.

// Computed is what the evidence says: the report's figures (all but Units, which the sale
// states), its speed classes, its moments and the pre-queue.
type Computed struct {
	Figures      Figures
	SpeedClasses []SpeedClass
	// Moments, Unix ms (0: did not happen).
	FirstAdmission, LastAdmission, FirstOrder, SoldOut int64
	// Prequeue is the pre-queue's entry ids in the queue's order.
	Prequeue []string
	// Kinds counts the log's lines by kind (a kind the computation does not know is counted
	// here only).
	Kinds map[string]int64
	// Problems: lines that do not parse, and admissions out of the queue's order.
	Problems []string
}

type entrant struct {
	admitted int64 // first admission, ms (0: never)
	token    int64 // first token at or after it, ms (0: none)
	buyer    bool
	units    int64
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
	var queue []string
	walked := 0
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
		switch kind {
		case "q":
			seq, entry, ok := strings.Cut(rest, ":")
			s, err := strconv.ParseInt(seq, 10, 64)
			if !ok || err != nil || entry == "" || s < 0 {
				problem("line %d: %q is not a place", n, line)
				continue
			}
			get(entry)
			queue = append(queue, entry)
			if s == 0 {
				c.Prequeue = append(c.Prequeue, entry)
				c.Figures.PreQueued++
			} else {
				c.Figures.Arrivals++
			}
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
				// The walk: an admission is the next place of the queue, or the return of a
				// waiter passed while absent (docs/room.md, "Admission").
				switch {
				case passed[entry]:
					delete(passed, entry)
				case walked < len(queue) && queue[walked] == entry:
					walked++
				default:
					problem("admission of %s at %d is neither the queue's next place nor a passed waiter's return", entry, ms)
				}
			case "s":
				c.Figures.Passed++
				get(entry)
				if walked < len(queue) && queue[walked] == entry {
					walked++
					passed[entry] = true
				} else {
					problem("%s passed at %d is not the queue's next place", entry, ms)
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
}
