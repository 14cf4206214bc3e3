package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/seckilledge/seckill/bench/load"
	"github.com/seckilledge/seckill/bench/scenario/crowd"
	"github.com/seckilledge/seckill/internal/invariants"
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// outcomeColor keeps one color per outcome across every chart of the page.
func outcomeColor(o string) string {
	fixed := map[string]string{"accepted": "#2ca02c", "ok": "#17becf", "sold_out": "#1f77b4", "already_bought": "#9467bd",
		"rate_limited": "#ff7f0e", "token_used": "#8c564b", "invalid_token": "#e377c2", "error": "#d62728"}
	if c, ok := fixed[o]; ok {
		return c
	}
	h := 0
	for _, b := range []byte(o) {
		h = h*31 + int(b)
	}
	return palette[(h&0x7fffffff)%len(palette)]
}

const (
	chartW, chartH = 940, 300
	padL, padR     = 60, 260
	padT, padB     = 20, 40
)

// latencyChart draws the latency distribution of every run: percentile on a "nines" axis
// (50, 90, 99, 99.9, 99.99) against milliseconds on a log axis, the usual HDR plot.
func latencyChart(runs []*crowd.Outcome) template.HTML {
	var b strings.Builder
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	nines := func(q float64) float64 {
		if q >= 99.99 {
			return 4
		}
		return math.Log10(100 / (100 - q))
	}
	lo, hi := math.Inf(1), 0.0
	for _, r := range runs {
		for _, p := range load.Distribution(r.Rush.Latency) {
			v := math.Max(p[1], 0.01)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi == 0 {
		return ""
	}
	llo, lhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if lhi == llo {
		lhi++
	}
	x := func(q float64) float64 { return padL + nines(q)/4*plotW }
	y := func(v float64) float64 {
		return padT + plotH - (math.Log10(math.Max(v, 0.01))-llo)/(lhi-llo)*plotH
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`, chartW, chartH)
	for e := llo; e <= lhi; e++ {
		v := math.Pow(10, e)
		fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%g ms</text>`,
			padL, padL+plotW, y(v), y(v), padL-4, y(v)+4, v)
	}
	for _, q := range []float64{0, 90, 99, 99.9, 99.99} {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.0f" stroke="#eee"/><text x="%.1f" y="%.0f" text-anchor="middle">p%g</text>`,
			x(q), x(q), padT, padT+plotH, x(q), padT+plotH+16, q)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">percentile</text>`, padL+plotW/2, chartH-4)
	for i, r := range runs {
		pts := load.Distribution(r.Rush.Latency)
		if len(pts) == 0 {
			continue
		}
		var path []string
		for _, p := range pts {
			path = append(path, fmt.Sprintf("%.1f,%.1f", x(p[0]), y(p[1])))
		}
		col := palette[i%len(palette)]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, col, strings.Join(path, " "))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%d" width="10" height="10" fill="%s"/><text x="%.0f" y="%d">%s</text>`,
			padL+plotW+10, padT+i*16, col, padL+plotW+24, padT+i*16+9, template.HTMLEscapeString(r.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// timelineChart draws a run over time: answers per second in each 100 ms bucket, stacked by
// outcome, with the bucket's p99 latency as a line on the right axis.
func timelineChart(r *load.Result) template.HTML {
	if r == nil || len(r.Timeline) == 0 {
		return ""
	}
	var b strings.Builder
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	outcomes := load.SortedOutcomes(r.Outcomes)
	perSec := 1e3 / float64(load.BucketWidth.Milliseconds())
	maxRate, maxP99 := 1.0, 0.001
	for _, bk := range r.Timeline {
		maxRate = math.Max(maxRate, float64(bk.Completed)*perSec)
		maxP99 = math.Max(maxP99, float64(bk.P99us)/1000)
	}
	n := len(r.Timeline)
	bw := plotW / float64(n)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`, chartW, chartH)
	for i := 0; i <= 4; i++ {
		v := maxRate * float64(i) / 4
		yy := padT + plotH - plotH*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%.0f/s</text>`,
			padL, padL+plotW, yy, yy, padL-4, yy+4, v)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" fill="#000">%.1f ms</text>`, padL+plotW+4, yy+4, maxP99*float64(i)/4)
	}
	for i, bk := range r.Timeline {
		yy := padT + plotH
		for _, o := range outcomes {
			c := bk.Outcomes[o]
			if c == 0 {
				continue
			}
			h := float64(c) * perSec / maxRate * plotH
			yy -= h
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, padL+float64(i)*bw, yy, math.Max(bw-0.5, 0.5), h, outcomeColor(o))
		}
	}
	var line []string
	for i, bk := range r.Timeline {
		if bk.Completed == 0 {
			continue
		}
		line = append(line, fmt.Sprintf("%.1f,%.1f", padL+(float64(i)+0.5)*bw, padT+plotH-float64(bk.P99us)/1000/maxP99*plotH))
	}
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#000" stroke-width="1.5" points="%s"/>`, strings.Join(line, " "))
	secs := float64(n) / perSec
	for s := 0.0; s <= secs; s += math.Max(1, math.Ceil(secs/10)) {
		xx := padL + s/secs*plotW
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%gs</text>`, xx, padT+plotH+16, s)
	}
	for i, o := range outcomes {
		fmt.Fprintf(&b, `<rect x="%.0f" y="%d" width="10" height="10" fill="%s"/><text x="%.0f" y="%d">%s</text>`,
			padL+plotW+64, padT+i*16, outcomeColor(o), padL+plotW+78, padT+i*16+9, template.HTMLEscapeString(o))
	}
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%d" y2="%d" stroke="#000" stroke-width="1.5"/><text x="%.0f" y="%d">p99</text>`,
		padL+plotW+64, padL+plotW+74, padT+len(outcomes)*16+5, padT+len(outcomes)*16+5, padL+plotW+78, padT+len(outcomes)*16+9)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

type htmlRun struct {
	O        *crowd.Outcome
	Timeline template.HTML
	Checks   []invariants.Check
	Outcomes string
}

var page = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>seckill-bench {{.R.Date.Format "2006-01-02 15:04"}}</title>
<style>
body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}.PASS{color:#2a2}.FAIL{color:#c22;font-weight:bold}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}
</style></head><body>
<h1>seckill-bench</h1>
<p>{{.R.Date.Format "2006-01-02 15:04 MST"}} &middot; {{.R.Machine.CPUs}} CPUs, {{.R.Machine.MemMiB}} MiB &middot; {{.R.Machine.CPU}} &middot; {{.R.Machine.Go}}</p>
<p><code>{{.R.Command}}</code></p>
<p>Crowd: {{.R.Crowd.Users}} users, {{.R.Crowd.Bots}} bots &times; {{.R.Crowd.BotHits}} clicks, {{.R.Crowd.Replays}} replayed and {{.R.Crowd.Forged}} forged tokens, {{.R.Crowd.Late}} late arrivals; stock {{.R.Stock}}.
{{if .R.PeakRSS}}Peak memory: {{range $k, $v := .R.PeakRSS}}{{$k}} {{$v}} KiB &nbsp;{{end}}{{end}}</p>
<h2>Comparison</h2>
<pre>{{.Table}}</pre>
{{if .R.Targets}}<h2>Targets</h2><table><tr><th>target</th><th>want</th><th>got</th><th></th></tr>
{{range .R.Targets}}<tr><td>{{.Name}}</td><td>{{.Want}}</td><td>{{printf "%.2f" .Got}} {{.Unit}}</td><td class="{{if .Met}}PASS{{else}}FAIL{{end}}">{{if .Met}}met{{else}}missed{{end}}</td></tr>{{end}}</table>{{end}}
<h2>Latency distribution</h2>
<p>From when each request was due (open model) or sent (closed model).</p>
{{.Latency}}
{{range .Runs}}
<h2>{{.O.Name}}</h2>
<p>{{.O.Rush.Model}}: {{.O.Rush.Completed}} answers, {{printf "%.0f" .O.Rush.Throughput}} req/s. {{.Outcomes}}</p>
{{.Timeline}}
{{if .Checks}}<table>{{range .Checks}}<tr><td class="{{.Verdict}}">{{.Verdict}}</td><td style="text-align:left">{{.N}}. {{.Name}}</td><td style="text-align:left">{{.Detail}}</td></tr>{{end}}</table>{{end}}
{{if .O.Drain}}<p>Drain: {{.O.Drain}}</p>{{end}}
{{end}}
{{range .R.Notes}}<p>Note: {{.}}</p>{{end}}
</body></html>
`))

// HTML writes the self-contained report.
func HTML(w io.Writer, r *crowd.Result) error {
	var tbl bytes.Buffer
	Table(&tbl, r)
	runs := r.All()
	data := struct {
		R       *crowd.Result
		Table   string
		Latency template.HTML
		Runs    []htmlRun
	}{R: r, Table: tbl.String(), Latency: latencyChart(runs)}
	for _, o := range runs {
		hr := htmlRun{O: o, Timeline: timelineChart(o.Rush), Outcomes: outcomeSummary(o.Rush.Outcomes)}
		if o.Verify != nil {
			hr.Checks = append(append(hr.Checks, o.Verify.Checks...), o.Checks...)
		}
		data.Runs = append(data.Runs, hr)
	}
	return page.Execute(w, data)
}
