//go:build ignore

// actiongraph sums where a go build or go test spent its time, from the action graph the go
// command writes with -debug-actiongraph: the time of each kind of action (compile, link, test
// run, ...) and the longest actions. make unit-profile runs the pure tier's build and prints it:
//
//	go test -short -vet=off -ldflags='-s -w' -count=1 -run '^$' -debug-actiongraph=/tmp/ag.json ./...
//	go run scripts/actiongraph.go -top 15 /tmp/ag.json
//
// Actions run side by side (go test -p), so the times add up to more than the wall time; an
// action that shares the cores with another takes longer than it would alone.
package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"
)

// action is the part of an action graph entry this reads (cmd/go/internal/work's actionJSON).
type action struct {
	Mode      string
	Package   string
	TimeStart time.Time
	TimeDone  time.Time
}

func main() {
	top := flag.Int("top", 15, "how many of the longest actions to list")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: go run scripts/actiongraph.go [-top N] ACTIONGRAPH.json")
		os.Exit(2)
	}
	raw, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var all []action
	if err := json.Unmarshal(raw, &all); err != nil {
		fmt.Fprintln(os.Stderr, "not an action graph:", err)
		os.Exit(1)
	}
	type mode struct {
		name  string
		n     int
		total time.Duration
	}
	byMode := map[string]*mode{}
	var ran []action
	var first, last time.Time
	for _, a := range all {
		if a.TimeStart.IsZero() || a.TimeDone.IsZero() {
			continue // cached, or never started
		}
		m := byMode[a.Mode]
		if m == nil {
			m = &mode{name: a.Mode}
			byMode[a.Mode] = m
		}
		m.n++
		m.total += a.TimeDone.Sub(a.TimeStart)
		ran = append(ran, a)
		if first.IsZero() || a.TimeStart.Before(first) {
			first = a.TimeStart
		}
		if a.TimeDone.After(last) {
			last = a.TimeDone
		}
	}
	modes := make([]*mode, 0, len(byMode))
	for _, m := range byMode {
		if m.total >= 100*time.Millisecond {
			modes = append(modes, m)
		}
	}
	slices.SortFunc(modes, func(a, b *mode) int { return cmp.Compare(b.total, a.total) })
	fmt.Printf("%d actions ran, from the first start to the last end %.1fs\n", len(ran), last.Sub(first).Seconds())
	fmt.Println("\nkind of action       count   total time")
	for _, m := range modes {
		fmt.Printf("%-20s %5d  %8.1fs\n", m.name, m.n, m.total.Seconds())
	}
	slices.SortFunc(ran, func(a, b action) int {
		return cmp.Compare(b.TimeDone.Sub(b.TimeStart), a.TimeDone.Sub(a.TimeStart))
	})
	fmt.Printf("\nthe %d longest actions\n", min(*top, len(ran)))
	for _, a := range ran[:min(*top, len(ran))] {
		fmt.Printf("%7.2fs  %-12s %s\n", a.TimeDone.Sub(a.TimeStart).Seconds(), a.Mode, a.Package)
	}
}
