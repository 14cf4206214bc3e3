// Package report renders a benchmark result: a terminal table, a JSON file, and a
// self-contained HTML page whose charts are inline SVG (no script, no CDN), so the report can be
// archived or attached to an issue and still render.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/bench/scenario/crowd"
	"github.com/seckilledge/seckill/internal/invariants"
)

// WriteJSON writes the result to path.
func WriteJSON(path string, r *crowd.Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func ratio(a, b float64) string {
	if b <= 0 || a <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// outcomeSummary lists the outcomes of a run, most frequent first.
func outcomeSummary(m map[string]int) string {
	var parts []string
	for _, k := range load.SortedOutcomes(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// Table prints the comparison the way BENCHMARKS.md records it (Markdown, readable in a
// terminal too).
func Table(w io.Writer, r *crowd.Result) {
	opt, ceil := r.Find(crowd.Optimistic), r.Find(crowd.Ceiling)
	var optT, ceilT float64
	if opt != nil {
		optT = opt.Rush.Throughput
	}
	if ceil != nil {
		ceilT = ceil.Rush.Throughput
	}
	fmt.Fprintf(w, "| contestant | model | requests | req/s | vs optimistic | vs respond | p50 ms | p90 ms | p99 ms | p99.9 ms | won |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	rows := r.All()
	for _, c := range rows {
		p := c.Latency
		won := "-"
		if c.Kind != crowd.Ceiling && c.Kind != crowd.PeerReturn {
			won = fmt.Sprint(c.Accepted)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.0f | %s | %s | %.2f | %.2f | %.2f | %.2f | %s |\n", c.Name, c.Rush.Model, c.Rush.Completed,
			c.Rush.Throughput, ratio(c.Rush.Throughput, optT), ratio(c.Rush.Throughput, ceilT), p.P50, p.P90, p.P99, p.P999, won)
	}
}

// Text prints the whole result for a terminal: the table, outcomes, drain, memory, invariants
// and targets.
func Text(w io.Writer, r *crowd.Result) {
	fmt.Fprintf(w, "\nseckill-bench  %s  %d CPUs, %d MiB  %s\n", r.Date.Format("2006-01-02 15:04 MST"), r.Machine.CPUs, r.Machine.MemMiB, r.Machine.CPU)
	fmt.Fprintf(w, "crowd: %d users (%.0f%% click 2-5 times), %d bots x %d clicks, %d replayed and %d forged tokens, %d late; stock %d\n\n",
		r.Crowd.Users, r.Crowd.Repeaters*100, r.Crowd.Bots, r.Crowd.BotHits, r.Crowd.Replays, r.Crowd.Forged, r.Crowd.Late, r.Stock)
	Table(w, r)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	all := r.All()
	for _, c := range all {
		fmt.Fprintf(tw, "%s\toutcomes:\t%s\n", c.Name, outcomeSummary(c.Rush.Outcomes))
		if c.Rush.Sent < c.Rush.Planned {
			fmt.Fprintf(tw, "\t\tcut at %v: %d of %d planned requests sent\n", c.Rush.Elapsed.Round(1e6), c.Rush.Sent, c.Rush.Planned)
		}
		if c.Rush.Late > 0 {
			fmt.Fprintf(tw, "\t\topen model: %d of %d requests sent late (worst %v); latency counts from when each was due\n",
				c.Rush.Late, c.Rush.Sent, c.Rush.MaxLate.Round(1e3))
		}
		if c.Tokens != nil {
			p := load.PercentilesOf(c.Tokens.Latency)
			fmt.Fprintf(tw, "\ttokens:\t%d in %v (%.0f/s, p99 %.2f ms): %s\n", c.Tokens.Completed, c.Tokens.Elapsed.Round(1e6), c.Tokens.Throughput, p.P99, outcomeSummary(c.Tokens.Outcomes))
		}
		if c.Late != nil {
			fmt.Fprintf(tw, "\tlate:\t%s\n", outcomeSummary(c.Late.Outcomes))
		}
		if c.Drain != nil {
			fmt.Fprintf(tw, "\tdrain:\t%s\n", c.Drain)
		}
		if len(c.CPU) > 0 {
			fmt.Fprintf(tw, "\tCPU per request:\t%s\n", CPUList(c.CPU))
		}
		if len(c.RedisCommands) > 0 {
			var parts []string
			for i, cc := range c.RedisCommands {
				if i == 6 {
					break
				}
				parts = append(parts, fmt.Sprintf("%s %.2f calls x %.1f µs", cc.Command, cc.CallsPerReq, cc.UsecPerCall))
			}
			fmt.Fprintf(tw, "\tRedis per request:\t%s\n", strings.Join(parts, ", "))
		}
		if ev := evalsha(c); ev != "" {
			fmt.Fprintf(tw, "\tEVALSHA:\t%s\n", ev)
		}
		if b := c.Breakdown; b != nil {
			fmt.Fprintf(tw, "\tbreakdown of the rush:\t%s\n", BreakdownLine(c))
		}
		if len(c.CPUPerPurchase) > 0 {
			fmt.Fprintf(tw, "\tCPU per purchase:\t%s\n", CPUList(c.CPUPerPurchase))
		}
		for _, e := range c.Rush.Errors {
			fmt.Fprintf(tw, "\terror:\t%s\n", e)
		}
	}
	tw.Flush()
	SideBySide(w, r)
	SLO(w, r)
	if len(r.PeakRSS) > 0 {
		fmt.Fprintf(w, "\npeak memory (VmHWM over the whole run):")
		for _, k := range []string{"gateway", "backend"} {
			if v, ok := r.PeakRSS[k]; ok {
				fmt.Fprintf(w, "  %s %.1f MiB", k, float64(v)/1024)
			}
		}
		fmt.Fprintln(w)
	}
	for _, c := range all {
		if c.Verify == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s, sale %s:\n", c.Name, c.Sale)
		for _, ch := range append(append([]invariants.Check{}, c.Verify.Checks...), c.Checks...) {
			fmt.Fprintf(w, "  %s  %d. %s: %s\n", ch.Verdict, ch.N, ch.Name, ch.Detail)
			for _, p := range ch.Problems {
				fmt.Fprintf(w, "          %s\n", p)
			}
		}
	}
	if len(r.Targets) > 0 {
		fmt.Fprintf(w, "\ntargets (same run):\n")
		for _, t := range r.Targets {
			mark := "met"
			if !t.Met {
				mark = "MISSED"
			}
			fmt.Fprintf(w, "  %-6s %s: %.2f %s (want %s)\n", mark, t.Name, t.Got, t.Unit, t.Want)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if r.OK() {
		fmt.Fprintf(w, "\nevery invariant PASSes\n")
	} else {
		fmt.Fprintf(w, "\nFAIL: an invariant or scenario check failed (see above)\n")
	}
}

// CPUServers is the order in which CPU figures are listed.
var CPUServers = []string{"gateway", "redis", "backend", "rabbitmq", "postgres"}

// CPUList formats CPU microseconds per server process, in CPUServers order, with their sum.
func CPUList(m map[string]float64) string {
	var parts []string
	sum := 0.0
	for _, k := range CPUServers {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.0f µs", k, v))
			sum += v
		}
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" (all %.0f µs)", sum)
}

// evalsha is the EVALSHA line of a run's Redis commandstats: calls and µs per call, per rush
// request and per purchase accepted in the rush ("" when it ran none).
func evalsha(c *crowd.Outcome) string {
	for _, cc := range c.RedisCommands {
		if cc.Command != "evalsha" {
			continue
		}
		s := fmt.Sprintf("%.2f calls per request x %.1f µs", cc.CallsPerReq, cc.UsecPerCall)
		if won := c.Rush.Outcomes["accepted"]; won > 0 {
			calls := cc.CallsPerReq * float64(c.Rush.Completed)
			s += fmt.Sprintf("; %.2f calls (%.1f µs) per purchase accepted in the rush", calls/float64(won), calls*cc.UsecPerCall/float64(won))
		}
		return s
	}
	return ""
}

// BreakdownLine is a run's Breakdown for one line: allocations and collections, Redis's
// persistence work, queueing (open model: how far latency from the due time exceeds the
// service time) and how busy the server CPUs were.
func BreakdownLine(c *crowd.Outcome) string {
	b := c.Breakdown
	known := func(v float64, f string) string {
		if v < 0 {
			return "?"
		}
		return fmt.Sprintf(f, v)
	}
	parts := []string{
		"gateway " + known(b.GatewayMallocsPerRequest, "%.0f") + " allocs/req, " + known(b.GatewayGCs, "%.0f") + " GCs (" + known(b.GatewayGCPause, "%.1f") + " ms paused)",
		"backend " + known(b.BackendGCs, "%.0f") + " GCs (" + known(b.BackendGCPause, "%.1f") + " ms)",
		"Redis " + known(b.RedisAOFDelayedFsyncs, "%.0f") + " delayed AOF fsyncs, " + known(b.RedisForks, "%.0f") + " forks",
	}
	if c.Rush.Late > 0 || c.Latency.P99 > c.Service.P99 {
		parts = append(parts, fmt.Sprintf("queueing: p99 %.1f ms from due vs %.1f ms from send, %d sent late", c.Latency.P99, c.Service.P99, c.Rush.Late))
	}
	sum := 0.0
	for _, v := range c.CPU {
		sum += v
	}
	if sum > 0 && c.Rush.Throughput > 0 {
		parts = append(parts, fmt.Sprintf("servers busy %.2f CPU-s/s", sum*c.Rush.Throughput/1e6))
	}
	if c.Kind == crowd.Edge {
		poll := "drain poll ON during the rush"
		if c.DrainAfterRush {
			poll = "drain poll off during the rush"
		}
		parts = append(parts, poll)
	}
	return strings.Join(parts, "; ")
}

// SideBySide prints the comparison's closed-model ratios when the edge ran with `respond` or the
// peer.
func SideBySide(w io.Writer, r *crowd.Result) {
	s := r.SideBySide()
	if s.GatewayVsRespond == 0 && s.GatewayVsPeer == 0 {
		return
	}
	f := func(x float64) string {
		if x == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", x)
	}
	fmt.Fprintf(w, "\nside by side (closed model, CPU per request): gateway edge / respond %s, edge / peer %s; gateway + Redis edge / peer %s\n",
		f(s.GatewayVsRespond), f(s.GatewayVsPeer), f(s.GatewayRedisVsPeer))
}

// SLO prints each capacity search: its probes, and the servers' spend at the rate found.
func SLO(w io.Writer, r *crowd.Result) {
	for _, s := range r.SLO {
		fmt.Fprintf(w, "\ncapacity at p99 <= %.0f ms, %s: %.0f/s", s.P99ms, s.Name, s.Rate)
		switch {
		case s.Capped:
			fmt.Fprintf(w, " (the search's maximum: it may go higher)")
		case s.Bound > 0:
			fmt.Fprintf(w, " (%.0f/s failed)", s.Bound)
		}
		fmt.Fprintln(w)
		for _, p := range s.Probes {
			verdict := "pass"
			if !p.Pass {
				verdict = "FAIL: " + p.Why
			}
			fmt.Fprintf(w, "  %7.0f/s  p99 %7.2f ms  %s\n", p.Rate, p.P99ms, verdict)
			if o := p.Outcome; o != nil && !o.OK() {
				var cs []invariants.Check
				if o.Verify != nil {
					cs = o.Verify.Checks
				}
				for _, ch := range append(cs, o.Checks...) {
					if ch.Verdict != invariants.Pass {
						fmt.Fprintf(w, "           %s  %d. %s: %s (sale %s)\n", ch.Verdict, ch.N, ch.Name, ch.Detail, o.Sale)
					}
				}
			}
		}
		if at := s.At(); at != nil && at.Outcome != nil {
			fmt.Fprintf(w, "  at %.0f/s, CPU per request: %s\n", s.Rate, CPUList(at.Outcome.CPU))
			if at.Outcome.Breakdown != nil {
				fmt.Fprintf(w, "  at %.0f/s: %s\n", s.Rate, BreakdownLine(at.Outcome))
			}
		}
	}
	if e, c := r.SLOOf(crowd.Edge), r.SLOOf(crowd.Ceiling); e != nil && c != nil && c.Rate > 0 {
		fmt.Fprintf(w, "capacity at the objective, edge / respond: %.2fx\n", e.Rate/c.Rate)
	}
}
