package bench

import (
	"fmt"
	"runtime"
	"time"

	"github.com/seckilledge/seckill/internal/proc"
)

// Machine is where a result was measured.
type Machine struct {
	CPUs   int    `json:"cpus"`
	MemMiB int    `json:"mem_mib"`
	CPU    string `json:"cpu,omitempty"`
	Go     string `json:"go"`
}

// ThisMachine reads nproc, memory and the CPU model.
func ThisMachine() Machine {
	mem, cpu := proc.Machine()
	return Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), MemMiB: int(mem >> 20), CPU: cpu}
}

// Target is one goal of the benchmark, measured in the same run.
type Target struct {
	Name string  `json:"name"`
	Want string  `json:"want"`
	Got  float64 `json:"got"`
	Unit string  `json:"unit"`
	Met  bool    `json:"met"`
}

// Result is everything one seckill-bench invocation measured.
type Result struct {
	Date    time.Time `json:"date"`
	Command string    `json:"command"`
	Machine Machine   `json:"machine"`
	Crowd   Crowd     `json:"crowd"`
	Stock   int       `json:"stock"`
	Conns   int       `json:"connections"`
	Rate    float64   `json:"open_rate"`
	// Pinned is set when the load generator ran on its own CPU, apart from the servers (-pin).
	Pinned bool `json:"pinned,omitempty"`
	// Contestants of the comparison (closed model, same crowd, same client).
	Contestants []*Outcome `json:"contestants"`
	// Open are the open-model runs at Rate (the full edge, and the ceiling when asked for).
	Open []*Outcome `json:"open,omitempty"`
	// PeakRSS of the started processes, KiB (VmHWM over the whole invocation).
	PeakRSS map[string]int `json:"peak_rss_kib,omitempty"`
	Targets []Target       `json:"targets,omitempty"`
	Notes   []string       `json:"notes,omitempty"`
}

// Find returns the contestant of a kind.
func (r *Result) Find(kind string) *Outcome {
	for _, c := range r.Contestants {
		if c.Kind == kind {
			return c
		}
	}
	return nil
}

// OK reports whether every verified run passed every check. Targets are reported, not
// enforced: speed depends on the machine; correctness does not.
func (r *Result) OK() bool {
	for _, c := range r.Contestants {
		if !c.OK() {
			return false
		}
	}
	for _, o := range r.Open {
		if !o.OK() {
			return false
		}
	}
	return true
}

// All is every run: the comparison, then the open-model runs.
func (r *Result) All() []*Outcome {
	return append(append([]*Outcome{}, r.Contestants...), r.Open...)
}

func (r *Result) findOpen(kind string) *Outcome {
	for _, c := range r.Open {
		if c.Kind == kind {
			return c
		}
	}
	return nil
}

// Evaluate fills Targets from what was measured (goals of the issue that set up the benchmark).
func (r *Result) Evaluate() {
	r.Targets = nil
	edge, opt, ceil := r.Find(Edge), r.Find(Optimistic), r.Find(Ceiling)
	if edge != nil && opt != nil && opt.Rush.Throughput > 0 {
		x := edge.Rush.Throughput / opt.Rush.Throughput
		r.Targets = append(r.Targets, Target{Name: "full edge vs optimistic lock, throughput", Want: ">= 30x", Got: x, Unit: "x", Met: x >= 30})
	}
	if edge != nil && ceil != nil && ceil.Rush.Throughput > 0 {
		x := edge.Rush.Throughput / ceil.Rush.Throughput
		r.Targets = append(r.Targets, Target{Name: "full edge vs plain respond, throughput", Want: ">= 0.4x", Got: x, Unit: "x", Met: x >= 0.4})
	}
	if o := r.findOpen(Edge); o != nil {
		p := o.Latency.P99
		r.Targets = append(r.Targets, Target{Name: fmt.Sprintf("full edge p99 at %.0f purchases/s (open)", r.Rate), Want: "<= 10 ms", Got: p, Unit: "ms", Met: p <= 10 && o.Rush.Completed > 0})
	}
	// The drain, per verified run: the slowest winner from its 202 to its row.
	for _, o := range r.All() {
		if o == nil || o.Drain == nil || o.Drain.Accepted == 0 {
			continue
		}
		worst := o.Drain.WorstMs()
		if !o.Drain.Settled {
			worst = 1e9 // never: some winner has no row (JSON has no infinity)
		}
		r.Targets = append(r.Targets, Target{Name: fmt.Sprintf("drain of %s: slowest of %d winners, 202 to row in Postgres", o.Name, o.Drain.Accepted),
			Want: "< 2000 ms", Got: worst, Unit: "ms", Met: worst < 2000})
	}
}
