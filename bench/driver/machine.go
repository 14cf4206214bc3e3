package driver

import (
	"os"
	"runtime"
	"sort"
	"strings"

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

// LoadAvg is the first three fields of /proc/loadavg ("" when unreadable): the machine's load,
// printed with every room result, since the runs share it.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// Median is the middle of v (the mean of the two middle values when len(v) is even; 0 when
// v is empty). v is not changed.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
