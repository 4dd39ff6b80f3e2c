package server

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// MemoryLimitShare is the part of the container's memory limit the Go runtime
// aims to stay under: the rest is left for what the runtime does not count
// (the executable's pages, buffers of the kernel on the process's behalf).
const MemoryLimitShare = 0.9

// cgroupMemoryFiles are where a container's memory limit is read: cgroup v2,
// then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// GCPercentUnderLimit is the garbage collector's target (GOGC) while a soft
// memory limit is in force. The limit then bounds the heap, and a webhook's
// live heap is small next to what it allocates per request: at Go's default
// of 100 it collects several times a second under load, about a sixth of its
// CPU (BenchmarkHandler's profile; 10 % more throughput at 400).
const GCPercentUnderLimit = 400

// SetMemoryLimit gives the Go runtime a soft memory limit of MemoryLimitShare
// of the container's memory limit, so that the garbage collector works harder
// as the heap nears the limit instead of the process being OOM-killed, unless
// GOMEMLIMIT is set (the runtime has then read it) or there is no limit.
// Under a limit, and unless GOGC is set, it raises the collector's target to
// GCPercentUnderLimit. It returns the limit in force (0: none) and the target
// set (0: Go's own) for the log.
func SetMemoryLimit() (limit int64, gcPercent int, err error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		// GOMEMLIMIT=off reads back as the largest int64: no limit.
		if limit = debug.SetMemoryLimit(-1); limit == math.MaxInt64 {
			limit = 0
		}
	} else if limit, err = containerMemoryLimit(cgroupMemoryFiles); err == nil && limit > 0 {
		limit = int64(float64(limit) * MemoryLimitShare)
		debug.SetMemoryLimit(limit)
	}
	if gcPercent = gcPercentFor(os.Getenv("GOGC"), limit); gcPercent > 0 {
		debug.SetGCPercent(gcPercent)
	}
	return limit, gcPercent, err
}

// gcPercentFor is the collector's target to set given GOGC and the soft
// limit in force; 0 leaves Go's own (GOGC's, or 100).
func gcPercentFor(gogc string, limit int64) int {
	if gogc != "" || limit <= 0 {
		return 0
	}
	return GCPercentUnderLimit
}

// containerMemoryLimit reads the first of files that exists: "max" (or a v1
// value of 2^63 rounded to pages) is no limit, 0.
func containerMemoryLimit(files []string) (int64, error) {
	for _, f := range files {
		data, err := os.ReadFile(filepath.Clean(f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		v := strings.TrimSpace(string(data))
		if v == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading the memory limit from %s: %w", f, err)
		}
		// cgroup v1 reports "no limit" as the largest page-aligned int64.
		if n >= 1<<62 {
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}
