package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ): 100 on
// every Linux this runs on, asked of getconf in case it is not.
var clockTicks = func() int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		return 100
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || n <= 0 {
		return 100
	}
	return n
}()

// cpuTime is the CPU time a process has used so far, user and system, all its
// threads included: utime+stime of /proc/<pid>/stat.
func cpuTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: the
	// fields are counted from the last ')'. utime and stime are fields 14 and 15.
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(raw[end+1:]))
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	var ticks int64
	for _, f := range []string{fields[utime], fields[stime]} {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / time.Duration(clockTicks), nil
}

// memory is a process's resident set size now (VmRSS) and at its highest so far
// (VmHWM), in bytes, and the part of VmRSS that is the process's own memory
// (RssAnon: heap, stacks, runtime) rather than pages of its executable
// (RssFile), which the kernel can drop and reread.
type memory struct {
	RSS, HWM, Anon, File uint64
}

// readMemory reads VmRSS, VmHWM, RssAnon and RssFile from /proc/<pid>/status.
func readMemory(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM" && key != "RssAnon" && key != "RssFile") {
			continue
		}
		kib, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc/%d/status %s: %w", pid, key, err)
		}
		switch key {
		case "VmRSS":
			m.RSS = kib << 10
		case "VmHWM":
			m.HWM = kib << 10
		case "RssAnon":
			m.Anon = kib << 10
		case "RssFile":
			m.File = kib << 10
		}
	}
	if err := sc.Err(); err != nil {
		return memory{}, err
	}
	if m.RSS == 0 {
		return memory{}, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
	}
	return m, nil
}

// mib renders bytes in MiB.
func mib(b uint64) float64 { return float64(b) / (1 << 20) }
