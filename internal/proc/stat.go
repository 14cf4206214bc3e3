package proc

import (
	"time"

	"github.com/prometheus/procfs"
)

// CPUTime is the CPU time a process has used so far (user + system), 0 if unknown.
func CPUTime(pid int) time.Duration {
	st, ok := stat(pid)
	if !ok {
		return 0
	}
	return time.Duration(st.CPUTime() * float64(time.Second))
}

func stat(pid int) (procfs.ProcStat, bool) {
	if pid <= 0 {
		return procfs.ProcStat{}, false
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procfs.ProcStat{}, false
	}
	st, err := p.Stat()
	return st, err == nil
}

func status(pid int) (procfs.ProcStatus, bool) {
	if pid <= 0 {
		return procfs.ProcStatus{}, false
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procfs.ProcStatus{}, false
	}
	st, err := p.NewStatus()
	return st, err == nil
}

// RSS is a process's resident memory now (VmRSS) in bytes, 0 if unknown.
func RSS(pid int) int64 {
	st, ok := status(pid)
	if !ok {
		return 0
	}
	return int64(st.VmRSS)
}

// PeakRSS is a process's peak resident memory (VmHWM) in bytes, 0 if unknown.
func PeakRSS(pid int) int64 {
	st, ok := status(pid)
	if !ok {
		return 0
	}
	return int64(st.VmHWM)
}

// Machine is the memory and CPU model of this machine, from /proc/meminfo and /proc/cpuinfo
// (zero values when unknown).
func Machine() (memBytes int64, cpuModel string) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, ""
	}
	if mi, err := fs.Meminfo(); err == nil && mi.MemTotalBytes != nil {
		memBytes = int64(*mi.MemTotalBytes)
	}
	if ci, err := fs.CPUInfo(); err == nil && len(ci) > 0 {
		cpuModel = ci[0].ModelName
	}
	return memBytes, cpuModel
}
