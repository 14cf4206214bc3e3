package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"time"
)

// drawStatus is the body of GET and POST /admin/sales/{id}/draw (docs/draw.md "Shapes shared by
// the parts"), as far as the table shows it; -o json prints the whole answer.
type drawStatus struct {
	SaleID           string         `json:"sale_id"`
	State            string         `json:"state"`
	Entries          int            `json:"entries"`
	EntriesByVariant map[string]int `json:"entries_by_variant"`
	Root             string         `json:"root"`
	SeedCommitment   string         `json:"seed_commitment"`
	// Randomness, Beacon and Waiting: how the ranking is made (docs/draw.md, "A public beacon").
	Randomness string `json:"randomness"`
	Beacon     *struct {
		ChainHash string `json:"chain_hash"`
		Round     uint64 `json:"round"`
	} `json:"beacon"`
	Waiting string `json:"waiting"`
	Waves   []struct {
		Variant    string    `json:"variant"`
		Wave       int       `json:"wave"`
		Lo         int       `json:"lo"`
		Hi         int       `json:"hi"`
		At         time.Time `json:"at"`
		ClaimUntil time.Time `json:"claim_until"`
		Claimed    int       `json:"claimed"`
	} `json:"waves"`
}

// draw is "draw show SALE" (entries per size, waves, claims) and "draw run SALE" (close the
// entries if still open and draw now: POST, audited by the backend).
func (c *cli) draw(ctx context.Context, args []string) error {
	if len(args) == 0 || (args[0] != "show" && args[0] != "run") {
		return fmt.Errorf("%w: draw needs show or run", errUsage)
	}
	pos, err := c.parse(c.flags("draw "+args[0]), args[1:], "SALE")
	if err != nil {
		return err
	}
	method := "GET"
	if args[0] == "run" {
		method = "POST"
	}
	var st drawStatus
	var raw []byte
	if err := c.call(ctx, method, "/admin/sales/"+url.PathEscape(pos[0])+"/draw", nil, &st, &raw); err != nil {
		return err
	}
	c.show(raw, func(w io.Writer) {
		switch {
		case args[0] == "run" && st.Waiting != "":
			fmt.Fprintf(w, "draw run %s: closed, %s (the backend draws as soon as it has the round)\n", pos[0], st.Waiting)
		case args[0] == "run":
			fmt.Fprintf(w, "draw run %s: done\n", pos[0])
		}
		drawTables(w, st)
	})
	return nil
}

func drawTables(w io.Writer, st drawStatus) {
	root := st.Root
	if root == "" {
		root = "- (published at the close)"
	}
	randomness := "commit-reveal only (no public beacon)"
	if b := st.Beacon; b != nil {
		randomness = fmt.Sprintf("commit-reveal + drand round %d of chain %s", b.Round, b.ChainHash)
	}
	rows := [][]string{{"sale", st.SaleID}, {"state", st.State}, {"entries", strconv.Itoa(st.Entries)},
		{"seed commitment", st.SeedCommitment}, {"entries root", root}, {"randomness", randomness}}
	if st.Waiting != "" {
		rows = append(rows, []string{"waiting", st.Waiting})
	}
	table(w, rows)
	fmt.Fprintln(w)
	variants := make([]string, 0, len(st.EntriesByVariant))
	for v := range st.EntriesByVariant {
		variants = append(variants, v)
	}
	sort.Strings(variants)
	rows = [][]string{{"VARIANT", "ENTRIES"}}
	for _, v := range variants {
		rows = append(rows, []string{sizeName(v), strconv.Itoa(st.EntriesByVariant[v])})
	}
	table(w, rows)
	if len(st.Waves) == 0 {
		return
	}
	fmt.Fprintln(w)
	rows = [][]string{{"VARIANT", "WAVE", "RANKS", "WINNERS", "CLAIMED", "DRAWN", "CLAIM UNTIL"}}
	for _, x := range st.Waves {
		// Ranks are 1-based for people: positions [lo, hi) are ranks lo+1 to hi.
		ranks := "-"
		if x.Hi > x.Lo {
			ranks = fmt.Sprintf("%d-%d", x.Lo+1, x.Hi)
		}
		rows = append(rows, []string{sizeName(x.Variant), strconv.Itoa(x.Wave), ranks, strconv.Itoa(x.Hi - x.Lo),
			strconv.Itoa(x.Claimed), when(x.At), when(x.ClaimUntil)})
	}
	table(w, rows)
}

// sizeName is a variant as the tables show it: a sale without variants draws under the empty
// variant, which would otherwise be a blank cell that shifts the row's columns to the eye.
func sizeName(v string) string {
	if v == "" {
		return "-"
	}
	return v
}
