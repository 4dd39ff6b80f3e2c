package server

import (
	"errors"
	"fmt"
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

// SetMemoryLimit gives the Go runtime a soft memory limit of MemoryLimitShare
// of the container's memory limit, so that the garbage collector works harder
// as the heap nears the limit instead of the process being OOM-killed, unless
// GOMEMLIMIT is set (the runtime has then read it) or there is no limit. It
// returns the limit set (0: none) for the log.
func SetMemoryLimit() (int64, error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	limit, err := containerMemoryLimit(cgroupMemoryFiles)
	if err != nil || limit <= 0 {
		return 0, err
	}
	soft := int64(float64(limit) * MemoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft, nil
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
