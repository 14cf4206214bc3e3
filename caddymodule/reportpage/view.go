package reportpage

import (
	"sort"
	"strings"

	"golang.org/x/text/number"

	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	rep "github.com/seckilledge/seckill/contract/report"
)

// view is what the template writes: every text already in the page's language, every number
// already formatted for it.
type view struct {
	pagekit.Data
	Title, Heading string
	Summary        []string
	DemoKey        bool
	Figures        []row
	Refused        []row
	Timeline       []moment
	Checks         []check
	Classes        []class
	Flagged        string
	Kid, Alg       string
	Evidence       []row
	Built          moment
	Verify         string
	ReportURL      string
	EvidenceURL    string
	KeysURL        string
}

type row struct{ Label, Value string }

type moment struct{ Label, At, Shown string }

type check struct {
	Label, Result, Outcome, Detail string
}

type class struct {
	Label, Entrants, Buyers, Units, Share, Win string
}

// t is a message of the page's language (the catalogues have every key: their test holds it).
func t(d pagekit.Data, key string, args ...any) string {
	s, err := d.T(key, args...)
	if err != nil {
		return key
	}
	return s
}

// figures are the report's counts in the order the page lists them, each with its message key.
func figures(f rep.Figures) []struct {
	key string
	n   int64
} {
	return []struct {
		key string
		n   int64
	}{
		{"units", f.Units}, {"entrants", f.Entrants}, {"pre_queued", f.PreQueued}, {"arrivals", f.Arrivals},
		{"admitted", f.Admitted}, {"passed", f.Passed}, {"no_shows", f.NoShows}, {"left", f.Left},
		{"banned", f.Banned}, {"tokens", f.Tokens}, {"buyers", f.Buyers}, {"bought", f.Bought},
		{"unused_admissions", f.UnusedAdmissions},
	}
}

func (p *Page) view(lang string, r *rep.Report, sig rep.Signature, origin string) view {
	d := p.kit.Static(lang, r.Sale)
	d.Style = p.style // the kit's and ours: the stylesheet the policy names by its hash
	v := view{Data: d, DemoKey: r.DemoKey, Kid: sig.Kid, Alg: sig.Alg}
	v.Title = t(d, "report.title")
	v.Heading = t(d, "report.heading", "sale", r.Sale)
	v.Summary = []string{
		t(d, "report.summary_units", "units", r.Figures.Units),
		t(d, "report.summary_entrants", "entrants", r.Figures.Entrants),
		t(d, "report.summary_bought", "bought", r.Figures.Bought),
	}
	for _, f := range figures(r.Figures) {
		v.Figures = append(v.Figures, row{t(d, "report.figure."+f.key), d.Number(f.n)})
	}
	if r.Flagged != nil {
		v.Flagged = d.Number(r.Flagged.Count)
	}
	reasons := make([]string, 0, len(r.Figures.Refused))
	for k := range r.Figures.Refused {
		reasons = append(reasons, k)
	}
	sort.Strings(reasons)
	for _, k := range reasons {
		v.Refused = append(v.Refused, row{k, d.Number(r.Figures.Refused[k])})
	}
	tl := r.Timeline
	for _, m := range []struct{ key, at string }{
		{"prequeue_from", tl.PrequeueFrom}, {"starts", tl.Starts}, {"first_admission", tl.FirstAdmission},
		{"last_admission", tl.LastAdmission}, {"first_order", tl.FirstOrder}, {"sold_out", tl.SoldOut}, {"ends", tl.Ends},
	} {
		if m.at != "" {
			v.Timeline = append(v.Timeline, moment{t(d, "report.moment."+m.key), m.at, shown(m.at)})
		}
	}
	v.Built = moment{t(d, "report.built_at"), r.BuiltAt, shown(r.BuiltAt)}
	for _, c := range []struct {
		key string
		r   rep.Result
	}{{"permutation", r.Checks.Permutation}, {"beacon", r.Checks.Beacon}} {
		outcome := c.r.Result
		if outcome != rep.Pass && outcome != rep.Fail {
			outcome = rep.NotApplicable
		}
		v.Checks = append(v.Checks, check{Label: t(d, "report.check."+c.key), Result: t(d, "report.result."+outcome),
			Outcome: outcome, Detail: c.r.Detail})
	}
	for _, c := range r.SpeedClasses {
		label := c.Class
		if known(c.Class) {
			label = t(d, "report.class."+c.Class)
		}
		v.Classes = append(v.Classes, class{Label: label, Entrants: d.Number(c.Entrants), Buyers: d.Number(c.Buyers),
			Units: d.Number(c.Units), Share: permille(d, c.SharePermille), Win: permille(d, c.WinPermille)})
	}
	v.Evidence = []row{
		{t(d, "report.evidence_sha"), r.Evidence.SHA256},
		{t(d, "report.evidence_lines"), d.Number(r.Evidence.Lines)},
		{t(d, "report.evidence_bytes"), d.Number(r.Evidence.Bytes)},
	}
	base := "/seckill/" + r.Sale + "/report"
	v.ReportURL, v.EvidenceURL, v.KeysURL = base, base+"/evidence", "/.well-known/seckill-report-keys"
	v.Verify = "seckill-bench verify-report -url " + origin + " -sale " + r.Sale
	return v
}

func known(class string) bool {
	for _, c := range rep.Classes {
		if c == class {
			return true
		}
	}
	return false
}

// permille is a share of a thousand as the language writes a percentage, to a tenth.
func permille(d pagekit.Data, n int64) string {
	return d.Number(number.Percent(float64(n)/1000, number.MaxFractionDigits(1)))
}

// shown is an RFC 3339 moment of the report as the page writes it: the date, the time to the
// millisecond and UTC, readable in every language.
func shown(at string) string {
	return strings.Replace(strings.TrimSuffix(at, "Z"), "T", " ", 1) + " UTC"
}
