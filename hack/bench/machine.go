package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine is what the figures were measured on.
type machine struct {
	CPUs      int
	CPUModel  string
	MemoryGiB float64
	Kernel    string
	// LoadAverage is the 1-minute load average when the run started: the
	// machine may be shared.
	LoadAverage string
	GoVersion   string
	Commit      string
	// Dirty is set when the working tree had uncommitted changes.
	Dirty      bool
	OPAVersion string
	Date       string
}

func describeMachine(o *options) machine {
	m := machine{
		CPUs:       runtime.NumCPU(),
		CPUModel:   cpuModel(),
		MemoryGiB:  memTotalGiB(),
		Kernel:     firstLine("/proc/sys/kernel/osrelease"),
		GoVersion:  runtime.Version(),
		OPAVersion: opaVersion(o.opa),
		Date:       time.Now().UTC().Format("2006-01-02 15:04 UTC"),
	}
	if f := strings.Fields(firstLine("/proc/loadavg")); len(f) > 0 {
		m.LoadAverage = f[0]
	}
	m.Commit, _ = runOutput("git", "rev-parse", "--short", "HEAD")
	if m.Commit == "" {
		m.Commit = "unknown"
	}
	// The report this run rewrites does not count as a change to the code.
	status, _ := runOutput("git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)docs/performance.md")
	m.Dirty = status != ""
	return m
}

// runOutput runs a command and returns its trimmed standard output.
func runOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return strings.TrimSpace(string(out)), err
}

func firstLine(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	return strings.TrimSpace(line)
}

// cpuModel is /proc/cpuinfo's first "model name".
func cpuModel() string {
	return procField("/proc/cpuinfo", "model name", "unknown")
}

// memTotalGiB is /proc/meminfo's MemTotal in GiB.
func memTotalGiB() float64 {
	kib, err := strconv.ParseFloat(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal", ""), " kB"), 64)
	if err != nil {
		return 0
	}
	return kib / (1 << 20)
}

// procField is the value of the first "key: value" line of a /proc file.
func procField(path, key, fallback string) string {
	f, err := os.Open(path)
	if err != nil {
		return fallback
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return fallback
}
