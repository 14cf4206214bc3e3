package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/bench/scenario/room"
	"github.com/seckilledge/seckill/internal/stackenv"
)

// runRoom is `seckill-bench room`: the waiting room's fairness scenario (a fast and a slow
// population, a sale without the room and one with it, side by side, -runs times, every
// invariant checked) and its poll benchmark (the room's poll against Caddy's respond), on a
// private stack whose gateway is bench/fairness.Caddyfile (docs/room.md, BENCHMARKS.md); and,
// asked with -only (docs/room.md, "Fairness and capacity, measured"), the room at scale (a crowd of waiters through two
// gateways, Redis commands per poll) and the last units with half the waiters absent (one
// stack per presence setting).
func runRoom(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seckill-bench room", flag.ContinueOnError)
	fs.SetOutput(stderr)
	only := fs.String("only", "fairness,poll", "what to run: fairness, poll, scale, lastunits")
	runs := fs.Int("runs", 3, "fairness runs (the table reports each and the medians)")
	var fo room.FairnessOptions
	fs.IntVar(&fo.Buyers, "buyers", 500, "buyers per population")
	fs.Float64Var(&fo.RoomRate, "room-rate", 5, "the room's admissions per second in the fairness sale")
	fs.Float64Var(&fo.StockShare, "stock-share", 0.1, "stock as a share of all buyers")
	var po room.PollOptions
	fs.IntVar(&po.Users, "poll-users", 2000, "waiters polling in the poll benchmark")
	fs.IntVar(&po.Conns, "poll-conns", 200, "connections of the poll benchmark")
	fs.DurationVar(&po.Duration, "poll-duration", 5*time.Second, "each side of each poll round")
	fs.IntVar(&po.Rounds, "poll-rounds", 3, "poll rounds (room, then respond)")
	var so room.ScaleOptions
	fs.IntVar(&so.Waiters, "scale-waiters", 100_000, "scale: waiters, spread over the gateways")
	fs.DurationVar(&so.Duration, "scale-duration", 60*time.Second, "scale: the polling phase")
	fs.DurationVar(&so.PollsOnly, "scale-polls-only", 0, "scale: the window of polls alone after the phase, whose Redis commands are the polls' own (default half the phase; negative: none)")
	fs.Float64Var(&so.Rate, "scale-rate", 200, "scale: the room's admissions per second")
	fs.DurationVar(&so.Session, "scale-session", 10*time.Second, "scale: how long an admission lives unused")
	fs.IntVar(&so.Stock, "scale-stock", 0, "scale: the sale's units (default: one per waiter, so admissions flow for the whole run)")
	fs.Float64Var(&so.BuyShare, "scale-buy", 0.5, "scale: share of admitted waiters who buy (the others let the admission lapse)")
	fs.Float64Var(&so.LeaveShare, "scale-leave", 0.05, "scale: share of waiters who leave the queue during the run")
	fs.IntVar(&so.Workers, "scale-workers", 256, "scale: requests in flight at most")
	scaleGateways := fs.Int("scale-gateways", 2, "scale: gateways (each its own Caddy process)")
	scaleRoom := fs.String("scale-room", "", `scale: more seckill_room settings for the gateways, ";"-separated (e.g. "front_window 2s; summary_interval 1s"); none: the Caddyfile's`)
	var lo room.LastUnitsOptions
	fs.IntVar(&lo.Waiters, "lastunits-waiters", 1200, "lastunits: pre-queued waiters")
	fs.IntVar(&lo.Units, "lastunits-units", 120, "lastunits: units")
	fs.DurationVar(&lo.Session, "lastunits-session", 20*time.Second, "lastunits: how long an admission lives unused")
	fs.Float64Var(&lo.Rate, "lastunits-rate", 10, "lastunits: the room's admissions per second")
	fs.Float64Var(&lo.AbsentShare, "lastunits-absent", 0.5, "lastunits: share of waiters who never poll after entering")
	fs.Float64Var(&lo.FastShare, "lastunits-fast", 0, "lastunits: share of the present waiters who are fast clients the gateway's throttle refuses and bans (e.g. 0.5)")
	fs.DurationVar(&lo.Lead, "lastunits-lead", 10*time.Second, "lastunits: everyone enters this long before the start (the absent are last seen then)")
	fs.DurationVar(&lo.Cap, "lastunits-cap", 5*time.Minute, "lastunits: the longest a run goes on after the start")
	presence := fs.String("lastunits-presence", "off,default,7s",
		"lastunits: the gateway's presence settings, one run (and stack) each: off (everyone admitted in turn, present or not), default (each waiter present until the refresh_s of his last answer plus a grace), or a window (refresh_max is lowered to fit it)")
	out := fs.String("out", "bench-results/room", "directory for room.json and room.md")
	root := fs.String("root", ".", "repository root")
	bin := fs.String("bin", "", "directory with caddy and seckill-backend (default: build them)")
	caddyfile := fs.String("caddyfile", "", "gateway Caddyfile (default <root>/bench/fairness.Caddyfile)")
	amqpURL := fs.String("amqp", stackenv.AMQPURL(), "RabbitMQ URL (a vhost of its own is created)")
	mgmt := fs.String("amqp-mgmt", stackenv.AMQPMgmtURL(), "RabbitMQ management API URL")
	pgAdmin := fs.String("pg-admin", stackenv.PGAdminURL(), "Postgres maintenance URL")
	adminToken := fs.String("admin-token", stackenv.Secret("SECKILL_ADMIN_TOKEN"), "backend admin token (default SECKILL_ADMIN_TOKEN, else a random one for the stack this run starts)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *caddyfile == "" {
		*caddyfile = filepath.Join(*root, "bench", "fairness.Caddyfile")
	}
	variants, err := presenceVariants(*presence)
	if err != nil {
		return errorf(stderr, "-lastunits-presence: %v", err)
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "[room] "+format+"\n", a...) }
	fo.Logf, po.Logf, so.Logf, lo.Logf = logf, logf, logf, logf
	// start starts a private stack of n gateways on the Caddyfile cf (each part that needs
	// another shape of stack starts its own).
	start := func(cf string, n int, logs string) (*driver.Stack, *driver.Driver, error) {
		stack, err := driver.Start(ctx, driver.StartOptions{Root: *root, BinDir: *bin, Caddyfile: cf, PrivateRedis: true, Gateways: n,
			AMQPURL: *amqpURL, MgmtURL: *mgmt, PGAdminURL: *pgAdmin, AdminToken: *adminToken,
			TokenKey: stackenv.Secret("SECKILL_TOKEN_KEY"), LogDir: filepath.Join(*out, logs)})
		if err != nil {
			return nil, nil, err
		}
		drv, err := driver.NewDriver(ctx, stack)
		if err != nil {
			stack.Close()
			return nil, nil, err
		}
		return stack, drv, nil
	}

	var md strings.Builder
	m := driver.ThisMachine()
	fmt.Fprintf(&md, "Command: `seckill-bench room %s`\nMachine: %d CPUs, %d MiB, %s, %s; date %s; load average %s\n",
		strings.Join(args, " "), m.CPUs, m.MemMiB, m.CPU, m.Go, time.Now().UTC().Format("2006-01-02 15:04 MST"), driver.LoadAvg())
	result := map[string]any{}
	ok := true
	if strings.Contains(*only, "fairness") || strings.Contains(*only, "poll") {
		stack, drv, err := start(*caddyfile, 1, "logs")
		if err != nil {
			return errorf(stderr, "%v", err)
		}
		code := func() int {
			defer stack.Close()
			defer drv.Close()
			if strings.Contains(*only, "fairness") {
				var all []*room.FairnessResult
				for i := range *runs {
					fo.Seed = uint64(i + 1)
					r, err := room.Fairness(ctx, drv, fo)
					if err != nil {
						return errorf(stderr, "fairness run %d: %v", i+1, err)
					}
					for _, s := range []*room.FairnessSale{r.Without, r.With} {
						if !s.Verify.OK() {
							ok = false
							fmt.Fprintf(stdout, "%s\n", s.Verify.String())
						}
					}
					all = append(all, r)
				}
				fairnessMarkdown(&md, all)
				result["fairness"] = all
			}
			if strings.Contains(*only, "poll") {
				r, err := room.RoomPoll(ctx, drv, po)
				if err != nil {
					return errorf(stderr, "poll: %v", err)
				}
				pollMarkdown(&md, r)
				result["poll"] = r
			}
			return 0
		}()
		if code != 0 {
			return code
		}
	}
	if strings.Contains(*only, "scale") {
		cf := *caddyfile
		if lines := strings.TrimSpace(strings.ReplaceAll(*scaleRoom, ";", "\n")); lines != "" {
			if cf, err = caddyfileWithRoomLines(cf, lines, filepath.Join(*out, "scale.Caddyfile")); err != nil {
				return errorf(stderr, "%v", err)
			}
			so.RoomLines = strings.ReplaceAll(lines, "\n", "; ")
		}
		stack, drv, err := start(cf, *scaleGateways, "logs-scale")
		if err != nil {
			return errorf(stderr, "%v", err)
		}
		r, err := room.RoomScale(ctx, drv, so)
		drv.Close()
		stack.Close()
		if err != nil {
			return errorf(stderr, "scale: %v", err)
		}
		if r.Verify != nil && !r.Verify.OK() {
			ok = false
			fmt.Fprintf(stdout, "%s\n", r.Verify.String())
		}
		scaleMarkdown(&md, r)
		result["scale"] = r
	}
	if strings.Contains(*only, "lastunits") {
		var all []*room.LastUnitsResult
		for i, v := range variants {
			cf, err := caddyfileWithRoomLines(*caddyfile, v.lines, filepath.Join(*out, "lastunits-"+v.name+".Caddyfile"))
			if err != nil {
				return errorf(stderr, "%v", err)
			}
			stack, drv, err := start(cf, 1, "logs-lastunits-"+v.name)
			if err != nil {
				return errorf(stderr, "%v", err)
			}
			lo.Seed = uint64(i + 1)
			name := v.name
			if lo.FastShare > 0 {
				name += fmt.Sprintf(", %.0f %% fast", lo.FastShare*100)
			}
			r, err := room.RoomLastUnits(ctx, drv, lo, name, v.lines)
			drv.Close()
			stack.Close()
			if err != nil {
				return errorf(stderr, "lastunits %s: %v", v.name, err)
			}
			if r.Verify != nil && !r.Verify.OK() {
				ok = false
				fmt.Fprintf(stdout, "%s\n", r.Verify.String())
			}
			all = append(all, r)
		}
		lastUnitsMarkdown(&md, all)
		result["lastunits"] = all
	}
	fmt.Fprint(stdout, md.String())
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return errorf(stderr, "%v", err)
	}
	b, _ := json.MarshalIndent(result, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "room.json"), b, 0o644); err != nil {
		return errorf(stderr, "%v", err)
	}
	if err := os.WriteFile(filepath.Join(*out, "room.md"), []byte(md.String()), 0o644); err != nil {
		return errorf(stderr, "%v", err)
	}
	if !ok {
		fmt.Fprintln(stdout, "\nroom: invariants FAIL")
		return 1
	}
	return 0
}

// presenceVariant is one gateway setting of the lastunits run: its name and the lines its
// seckill_room block gets.
type presenceVariant struct{ name, lines string }

// presenceVariants parses -lastunits-presence. A window shorter than the default refresh_max
// allows (refresh_max + summary_interval + 1s, the room's own bound: a waiter polls at least
// every refresh_max) comes with refresh_max lowered to fit it.
func presenceVariants(s string) ([]presenceVariant, error) {
	var out []presenceVariant
	for _, f := range strings.Split(s, ",") {
		switch f = strings.TrimSpace(f); f {
		case "":
		case "off":
			out = append(out, presenceVariant{"off", "presence_window off"})
		case "default":
			out = append(out, presenceVariant{"default", ""})
		default:
			d, err := time.ParseDuration(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not off, default or a duration", f)
			}
			refresh := d - 1500*time.Millisecond // the default summary_interval (500ms) and the 1s margin
			if refresh < time.Second {
				return nil, fmt.Errorf("a presence window of %s leaves refresh_max %s, below refresh_min 1s (at least 2.5s)", d, refresh)
			}
			lines := "presence_window " + d.String()
			if refresh < 30*time.Second {
				lines = "refresh 1s " + refresh.String() + "\n" + lines
			}
			out = append(out, presenceVariant{d.String(), lines})
		}
	}
	return out, nil
}

// caddyfileWithRoomLines writes a copy of the Caddyfile src whose seckill_room blocks get
// lines (none: an unchanged copy) to dst, and returns dst.
func caddyfileWithRoomLines(src, lines, dst string) (string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	n := 0
	for _, line := range strings.SplitAfter(string(b), "\n") {
		out.WriteString(line)
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "seckill_room") && strings.HasSuffix(t, "{") {
			n++
			indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))] + "\t"
			for _, l := range strings.Split(lines, "\n") {
				if l != "" {
					out.WriteString(indent + l + "\n")
				}
			}
		}
	}
	if n == 0 {
		return "", fmt.Errorf("%s has no seckill_room block", src)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	return dst, os.WriteFile(dst, []byte(out.String()), 0o644)
}

func fairnessMarkdown(w io.Writer, runs []*room.FairnessResult) {
	if len(runs) == 0 {
		return
	}
	o := runs[0]
	fmt.Fprintf(w, "\nFairness: %d fast and %d slow buyers, %d units, room rate %g/s; invariants checked on every sale.\n\n",
		o.Buyers, o.Buyers, o.With.Stock, o.RoomRate)
	fmt.Fprintln(w, "| run | sale | fast won | slow won | fast share | slow share | slow/fast | admitted fast / slow | sold out after | requests fast / slow | invariants |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	med := map[bool][]float64{}
	for i, r := range runs {
		for _, s := range []*room.FairnessSale{r.Without, r.With} {
			verdict := "PASS"
			if !s.Verify.OK() {
				verdict = "FAIL"
			}
			adm := "-"
			if s.Room {
				adm = fmt.Sprintf("%d / %d", s.Fast.Admitted, s.Slow.Admitted)
			}
			fmt.Fprintf(w, "| %d | %s | %d | %d | %.0f %% | %.0f %% | %.2f | %s | %.1f s | %d / %d | %d %s |\n", i+1, s.Name, s.Fast.Won, s.Slow.Won,
				100*s.Fast.Share, 100*s.Slow.Share, s.Ratio, adm, s.SoldOutS, s.Fast.Requests, s.Slow.Requests, len(s.Verify.Checks), verdict)
			med[s.Room] = append(med[s.Room], s.Ratio)
		}
	}
	fmt.Fprintf(w, "\nMedian slow/fast win-rate ratio: without the room %.2f, with the room %.2f (target >= 0.9).\n",
		driver.Median(med[false]), driver.Median(med[true]))
	// Pooled over the runs: the permutation is a lottery, and one run's 100 units leave a
	// binomial spread of about +-0.2 on the ratio; the pooled figure spreads less.
	var won [2][2]int // [room][fast]
	pre := 0
	for _, r := range runs {
		won[0][0], won[0][1] = won[0][0]+r.Without.Slow.Won, won[0][1]+r.Without.Fast.Won
		won[1][0], won[1][1] = won[1][0]+r.With.Slow.Won, won[1][1]+r.With.Fast.Won
		pre += r.With.Prequeued
	}
	pooled := func(i int) float64 {
		if won[i][1] == 0 {
			return 0
		}
		return float64(won[i][0]) / float64(won[i][1])
	}
	fmt.Fprintf(w, "Pooled over %d runs: without the room slow %d / fast %d units (%.2f), with the room slow %d / fast %d (%.2f); %d of %d room entries were in the pre-queue.\n",
		len(runs), won[0][0], won[0][1], pooled(0), won[1][0], won[1][1], pooled(1), pre, len(runs)*2*o.Buyers)
}

func pollMarkdown(w io.Writer, r *room.PollResult) {
	fmt.Fprintf(w, "\nPoll: %d waiters with tickets, %d connections, %d rounds (room then respond); medians.\n\n", r.Users, r.Conns, len(r.Rounds))
	fmt.Fprintln(w, "| round | room polls/s | respond req/s | ratio | room p99 | gateway µs/poll | redis µs/poll | respond gateway µs/req | scripts/poll | Redis commands/poll |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for i, rd := range r.Rounds {
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.2f | %.1f ms | %.0f | %.0f | %.0f | %.3f | %.1f |\n", i+1, rd.Room.Throughput, rd.Respond.Throughput, rd.Ratio,
			rd.Room.P99ms, rd.Room.CPU["gateway"], rd.Room.CPU["redis"], rd.Respond.CPU["gateway"], rd.ScriptsPerPoll, rd.RedisCommandsPerPoll)
	}
	fmt.Fprintf(w, "| median | %.0f | %.0f | %.2f | | %.0f | %.0f | %.0f | %.3f | %.1f |\n", r.RoomThroughput, r.RespondThroughput, r.Ratio,
		r.RoomGatewayUs, r.RoomRedisUs, r.RespondGatewayUs, r.ScriptsPerPoll, r.RedisPerPoll)
	fmt.Fprintf(w, "\n%d of %d polls answered `waiting`.\n", r.Waiting, r.Polls)
}

func scaleMarkdown(w io.Writer, r *room.ScaleResult) {
	setting := "the Caddyfile's seckill_room settings"
	if r.RoomLines != "" {
		setting = "seckill_room with `" + r.RoomLines + "`"
	}
	fmt.Fprintf(w, "\nScale: %d waiters through %d gateways (%s), room rate %g/s, session %g s, %d units; polling %.0f s (entry took %.0f s); load average %s.\n\n",
		r.Waiters, r.Gateways, setting, r.Rate, r.SessionS, r.Stock, r.PollingS, r.EnterS, r.LoadAvg)
	fmt.Fprintln(w, "| polls | polls/s | Redis commands/poll (tokens, buys, leaves included) | scripts/poll | from memory | Redis commands per poll that reached Redis | tokens / buys / leaves | room 6-9 | all checks | target (<= 0.05, 6-9 PASS) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	target := "missed"
	if r.TargetMet {
		target = "met"
	}
	perRedisPoll := "-"
	if n := r.Polls - r.FromMemory; n > 0 {
		perRedisPoll = fmt.Sprintf("%.1f", float64(r.RedisCommands)/float64(n))
	}
	fmt.Fprintf(w, "| %d | %.0f | %.4f | %.4f | %.1f %% | %s | %d / %d / %d | %s | %s | %s |\n", r.Polls, r.PollsPS, r.CommandsPerPoll, r.ScriptsPerPoll,
		100*r.FromMemoryShare, perRedisPoll, r.Tokens, r.Buys, r.Leaves, r.RoomChecks, r.AllChecks, target)
	if p := r.PollsOnly; p != nil {
		fmt.Fprintf(w, "\nPolls alone (%.0f s after the phase; %d admitted waiters held their token and purchase until it ended): %d polls, %d Redis commands (%d scripts): **%.4f commands a poll** (%.4f without the background's %.1f commands/s). By command: %s. Answers: %s.\n",
			p.Seconds, p.Held, p.Polls, p.RedisCommands, p.RedisScripts, p.CommandsPerPoll, p.NetPerPoll, r.BackgroundPS, countsLine(p.Commands), countsLine(p.Answers))
	}
	fmt.Fprintf(w, "\nAnswers: %s. Other requests: %s.\n", countsLine(r.Answers), countsLine(r.Outcomes))
	fmt.Fprintf(w, "Room when the polling began: %s; at the end: %s.\n", countsLine(r.RoomBefore), countsLine(r.Room))
	fmt.Fprintf(w, "The clients' requests left %.1f ms late on average against their schedule (at most %.0f ms).\n", r.LateMeanMs, r.LateMaxMs)
	fmt.Fprintf(w, "Redis commands in the phase (%d, %d scripts): %s.\n\n", r.RedisCommands, r.RedisScripts, countsLine(r.Commands))
	fmt.Fprintln(w, "| gateway | pid | RSS | peak RSS | polls from memory |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, g := range r.GatewayMem {
		fmt.Fprintf(w, "| %s | %d | %.1f MiB | %.1f MiB | %d |\n", g.URL, g.PID, float64(g.RSSKiB)/1024, float64(g.HWMKiB)/1024, g.PollsFromMemory)
	}
}

func lastUnitsMarkdown(w io.Writer, runs []*room.LastUnitsResult) {
	if len(runs) == 0 {
		return
	}
	o := runs[0]
	fmt.Fprintf(w, "\nLast units: %d pre-queued waiters, %d absent (never poll after entering), %d of the present fast clients (throttled, banned), %d units, room rate %g/s, session %g s; one stack per presence setting.\n\n",
		o.Waiters, o.Absent, o.Fast, o.Units, o.Rate, o.SessionS)
	fmt.Fprintln(w, "| presence | gateway setting | sold | first 10 % | last 10 % | last / first | target (<= 2) | admitted | lapsed | skipped | revoked | no-shows | room 6-9 | all checks | load average |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range runs {
		setting := strings.ReplaceAll(r.Caddy, "\n", "; ")
		if setting == "" {
			setting = "(none)"
		}
		last := fmt.Sprintf("%.1f s", r.LastS)
		switch {
		case r.Sold <= r.Units-max(r.Units/10, 1):
			last = "not reached" // the last 10 % never began to sell
		case !r.AllSold:
			last = ">= " + last // unsold at the cap: a lower bound
		}
		target := "met"
		if !r.AllSold || r.Ratio > 2 {
			target = "missed"
		}
		fmt.Fprintf(w, "| %s | `%s` | %d / %d | %.1f s | %s | %.2f | %s | %d | %d | %d | %d | %d | %s | %s | %s |\n", r.Variant, setting, r.Sold, r.Units,
			r.FirstS, last, r.Ratio, target, r.Room["admitted"], r.Room["lapsed"], r.Room["skipped"], r.Room["revoked"], r.Room["noshows"], r.RoomChecks, r.AllChecks, r.LoadAvg)
	}
}

// countsLine is a map's entries as "k v, k v", by key.
func countsLine[V int | int64](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
