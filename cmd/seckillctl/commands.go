package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/seckilledge/seckill/contract/admin"
)

// The API's answers, as far as the tables show them.

// The admin API's bodies are contract/admin's types, which the backend serves: the CLI decodes
// exactly what it serves without linking the backend.
type (
	saleSummary   = admin.SaleSummary
	saleStatus    = admin.SaleStatus
	controlResult = admin.ControlResult
)

// auditEntry is the CLI's own reading of an audit row: before and after decoded as values (not
// admin.AuditEntry's raw JSON), which compact prints as k=v pairs.
type auditEntry struct {
	At        time.Time `json:"at"`
	Who       string    `json:"who"`
	Role      string    `json:"role"`
	Action    string    `json:"action"`
	SaleID    string    `json:"sale_id"`
	Before    any       `json:"before"`
	After     any       `json:"after"`
	RequestID string    `json:"request_id"`
}

func (c *cli) dispatch(ctx context.Context, cmd string, args []string) error {
	switch cmd {
	case "sales":
		return c.sales(ctx, args)
	case "status":
		return c.status(ctx, args)
	case "create":
		return c.create(ctx, args)
	case "preheat", "reconcile", "rebalance":
		return c.job(ctx, cmd, args)
	case "pause", "resume":
		return c.control(ctx, cmd, args)
	case "end":
		return c.end(ctx, args)
	case "stock":
		return c.stock(ctx, args)
	case "audit":
		return c.audit(ctx, args)
	case "watch":
		return c.watch(ctx, args)
	case "pay":
		return c.pay(ctx, args)
	case "draw":
		return c.draw(ctx, args)
	case "help", "-h", "--help":
		fmt.Fprint(c.out, usage)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
}

func table(w io.Writer, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		for i, cell := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, cell)
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
}

func stock(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

func when(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }

func (c *cli) sales(ctx context.Context, args []string) error {
	if _, err := c.parse(c.flags("sales"), args); err != nil {
		return err
	}
	var list struct{ Sales []saleSummary }
	var raw []byte
	if err := c.call(ctx, "GET", "/admin/sales", nil, &list, &raw); err != nil {
		return err
	}
	c.show(raw, func(w io.Writer) {
		rows := [][]string{{"SALE", "STATE", "REDIS", "POSTGRES", "INITIAL", "BUYERS", "SHARDS", "STARTS", "ENDS"}}
		for _, s := range list.Sales {
			state := s.State
			if !s.Preheated && s.State != "ended" {
				state += " (not preheated)"
			}
			rows = append(rows, []string{s.ID, state, stock(s.StockRedis), strconv.Itoa(s.StockDB), strconv.Itoa(s.InitialStock),
				strconv.FormatInt(s.Buyers, 10), strconv.Itoa(s.Shards), when(s.StartsAt), when(s.EndsAt)})
		}
		table(w, rows)
	})
	return nil
}

func (c *cli) getStatus(ctx context.Context, sale string) (saleStatus, []byte, error) {
	var st saleStatus
	var raw []byte
	err := c.call(ctx, "GET", "/admin/sales/"+url.PathEscape(sale), nil, &st, &raw)
	return st, raw, err
}

func statusRows(st saleStatus) [][]string {
	rows := [][]string{
		{"sale", st.ID}, {"window", when(st.StartsAt) + " → " + when(st.EndsAt)},
		{"stock in Redis", stock(st.StockRedis)}, {"stock in Postgres", strconv.Itoa(st.StockDB)},
		{"initial stock", strconv.Itoa(st.InitialStock)}, {"buyers", strconv.FormatInt(st.Buyers, 10)},
		{"queued (202, no row yet)", strconv.Itoa(st.Queued)}, {"pay within", st.PayWithin},
	}
	if st.State != "" {
		rows = append(rows[:1], append([][]string{{"redis state", st.State}}, rows[1:]...)...)
	}
	statuses := make([]string, 0, len(st.Orders))
	for k := range st.Orders {
		statuses = append(statuses, k)
	}
	sort.Strings(statuses)
	for _, k := range statuses {
		rows = append(rows, []string{"orders " + k, strconv.Itoa(st.Orders[k])})
	}
	if st.Shards > 1 {
		rows = append(rows, []string{"shards", fmt.Sprint(st.Shards, " ", st.ShardStock)})
	}
	return rows
}

func (c *cli) status(ctx context.Context, args []string) error {
	pos, err := c.parse(c.flags("status"), args, "SALE")
	if err != nil {
		return err
	}
	st, raw, err := c.getStatus(ctx, pos[0])
	if err != nil {
		return err
	}
	c.show(raw, func(w io.Writer) { table(w, statusRows(st)) })
	return nil
}

func (c *cli) create(ctx context.Context, args []string) error {
	fs := c.flags("create")
	id := fs.String("id", "", "sale id")
	n := fs.Int("stock", 0, "units")
	starts := fs.String("starts", "", "start (RFC 3339)")
	in := fs.Duration("in", 0, "start this long from now (instead of -starts)")
	ends := fs.String("ends", "", "end (RFC 3339)")
	dur := fs.Duration("for", time.Hour, "the sale lasts this long (instead of -ends)")
	pay := fs.String("pay-within", "", "payment window, e.g. 15m")
	shards := fs.Int("shards", 0, "Redis stock shards (hot sales)")
	if _, err := c.parse(fs, args); err != nil {
		return err
	}
	if *id == "" {
		return fmt.Errorf("%w: create needs -id", errUsage)
	}
	start := time.Now().Add(*in)
	if *starts != "" {
		t, err := time.Parse(time.RFC3339, *starts)
		if err != nil {
			return fmt.Errorf("%w: -starts: %v", errUsage, err)
		}
		start = t
	}
	end := start.Add(*dur)
	if *ends != "" {
		t, err := time.Parse(time.RFC3339, *ends)
		if err != nil {
			return fmt.Errorf("%w: -ends: %v", errUsage, err)
		}
		end = t
	}
	body := map[string]any{"id": *id, "stock": *n, "starts_at": start.UTC().Format(time.RFC3339Nano), "ends_at": end.UTC().Format(time.RFC3339Nano)}
	if *pay != "" {
		body["pay_within"] = *pay
	}
	if *shards > 0 {
		body["shards"] = *shards
	}
	var st saleStatus
	var raw []byte
	if err := c.call(ctx, "POST", "/admin/sales", body, &st, &raw); err != nil {
		return err
	}
	c.show(raw, func(w io.Writer) {
		fmt.Fprintf(w, "created sale %s: %d units, %s → %s\n", st.ID, st.InitialStock, when(st.StartsAt), when(st.EndsAt))
	})
	return nil
}

// job runs preheat, reconcile or rebalance and prints the backend's report.
func (c *cli) job(ctx context.Context, cmd string, args []string) error {
	pos, err := c.parse(c.flags(cmd), args, "SALE")
	if err != nil {
		return err
	}
	var rep map[string]any
	var raw []byte
	if err := c.call(ctx, "POST", "/admin/sales/"+url.PathEscape(pos[0])+"/"+cmd, nil, &rep, &raw); err != nil {
		return err
	}
	c.show(raw, func(w io.Writer) {
		keys := make([]string, 0, len(rep))
		for k := range rep {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		rows := [][]string{}
		for _, k := range keys {
			rows = append(rows, []string{k, fmt.Sprint(rep[k])})
		}
		fmt.Fprintf(w, "%s %s: done\n", cmd, pos[0])
		table(w, rows)
	})
	return nil
}

func (c *cli) printControl(raw []byte, res controlResult) {
	c.show(raw, func(w io.Writer) {
		note := ""
		if res.Replayed {
			note = " (already applied: nothing changed)"
		}
		fmt.Fprintf(w, "%s %s: %s%s (request %s)\n", res.Action, res.Sale.ID, res.Sale.State, note, res.RequestID)
		rows := [][]string{{"stock in Redis", stock(res.Sale.StockRedis)}, {"stock in Postgres", strconv.Itoa(res.Sale.StockDB)},
			{"initial stock", strconv.Itoa(res.Sale.InitialStock)}, {"ends", when(res.Sale.EndsAt)}}
		if v := res.Variant; v != nil {
			rows = append(rows, []string{"variant", v.ID}, []string{"variant in Redis", stock(v.StockRedis)},
				[]string{"variant in Postgres", strconv.Itoa(v.StockDB)}, []string{"variant initial stock", strconv.Itoa(v.InitialStock)})
		}
		table(w, rows)
	})
}

func (c *cli) control(ctx context.Context, cmd string, args []string) error {
	pos, err := c.parse(c.flags(cmd), args, "SALE")
	if err != nil {
		return err
	}
	var res controlResult
	var raw []byte
	if err := c.call(ctx, "POST", "/admin/sales/"+url.PathEscape(pos[0])+"/"+cmd, nil, &res, &raw); err != nil {
		return err
	}
	c.printControl(raw, res)
	return nil
}

func (c *cli) end(ctx context.Context, args []string) error {
	fs := c.flags("end")
	at := fs.String("at", "", "move the end to this time (RFC 3339) instead of ending now")
	pos, err := c.parse(fs, args, "SALE")
	if err != nil {
		return err
	}
	var res controlResult
	var raw []byte
	path := "/admin/sales/" + url.PathEscape(pos[0])
	if *at == "" {
		err = c.call(ctx, "POST", path+"/end", nil, &res, &raw)
	} else {
		t, perr := time.Parse(time.RFC3339, *at)
		if perr != nil {
			return fmt.Errorf("%w: -at: %v", errUsage, perr)
		}
		err = c.call(ctx, "PATCH", path, map[string]any{"ends_at": t}, &res, &raw)
	}
	if err != nil {
		return err
	}
	c.printControl(raw, res)
	return nil
}

func (c *cli) stock(ctx context.Context, args []string) error {
	if len(args) == 0 || (args[0] != "add" && args[0] != "remove") {
		return fmt.Errorf("%w: stock add SALE N [-variant V] | stock remove SALE N [-variant V]", errUsage)
	}
	fs := c.flags("stock " + args[0])
	reqID := fs.String("request-id", "", "names the change: run again with the same id to retry safely (default: a new one, printed)")
	variant := fs.String("variant", "", "the variant whose units change (required on a sale with variants)")
	pos, err := c.parse(fs, args[1:], "SALE", "N")
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(pos[1])
	if err != nil || n == 0 {
		return fmt.Errorf("%w: N must be a non-zero integer", errUsage)
	}
	if args[0] == "remove" {
		n = -n
	}
	if *reqID == "" {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		*reqID = "ctl-" + hex.EncodeToString(b)
	}
	body := map[string]any{"add": n, "request_id": *reqID}
	if *variant != "" {
		body["variant"] = *variant
	}
	var res controlResult
	var raw []byte
	if err := c.call(ctx, "POST", "/admin/sales/"+url.PathEscape(pos[0])+"/stock", body, &res, &raw); err != nil {
		return fmt.Errorf("%w (retry safely with -request-id %s)", err, *reqID)
	}
	c.printControl(raw, res)
	return nil
}

func (c *cli) audit(ctx context.Context, args []string) error {
	fs := c.flags("audit")
	sale := fs.String("sale", "", "only this sale")
	limit := fs.Int("limit", 50, "newest entries to show")
	if _, err := c.parse(fs, args); err != nil {
		return err
	}
	q := url.Values{"limit": {strconv.Itoa(*limit)}}
	if *sale != "" {
		q.Set("sale", *sale)
	}
	var list struct{ Entries []auditEntry }
	var raw []byte
	if err := c.call(ctx, "GET", "/admin/audit?"+q.Encode(), nil, &list, &raw); err != nil {
		return err
	}
	c.show(raw, func(w io.Writer) {
		rows := [][]string{{"TIME", "WHO", "ROLE", "ACTION", "SALE", "BEFORE", "AFTER", "REQUEST"}}
		for _, e := range list.Entries {
			rows = append(rows, []string{when(e.At), e.Who, e.Role, e.Action, e.SaleID, compact(e.Before), compact(e.After), e.RequestID})
		}
		table(w, rows)
	})
	return nil
}

// compact prints a before/after map as k=v pairs, sorted.
func compact(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Sprint(v)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += " "
		}
		val := m[k]
		if val == nil {
			val = "-"
		}
		out += fmt.Sprintf("%s=%v", k, val)
	}
	return out
}

func (c *cli) pay(ctx context.Context, args []string) error {
	pos, err := c.parse(c.flags("pay"), args, "ORDER")
	if err != nil {
		return err
	}
	var res struct {
		OrderID string `json:"order_id"`
		Status  string `json:"status"`
	}
	var raw []byte
	if err := c.call(ctx, "POST", "/shop/orders/"+url.PathEscape(pos[0])+"/paid", nil, &res, &raw); err != nil {
		return err
	}
	c.show(raw, func(w io.Writer) { fmt.Fprintf(w, "order %s: %s\n", res.OrderID, res.Status) })
	return nil
}
