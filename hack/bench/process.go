package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kueue-guard/kueue-guard/test/testenv"
)

// stopTimeout is how long a child has to exit after SIGTERM before it is killed.
const stopTimeout = 15 * time.Second

// process is a server the harness started as a child: kueue-guard, the floor
// server or OPA. Its output goes to a log file, which errors quote.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{}
	err     error
	// gc is when the child's collector ran, for a child started with
	// traceGC (nil otherwise).
	gc *gcTrace
}

// startProcess starts a child whose output goes to logPath. The child is killed
// with the harness even if the harness itself is killed (parent-death signal).
func startProcess(name, logPath, binary string, args ...string) (*process, error) {
	return startTracedProcess(name, logPath, binary, false, args...)
}

// startTracedProcess is startProcess; with traceGC the child, a Go program,
// also traces its collector (GODEBUG=gctrace=1) and the harness keeps when
// each cycle ran (process.gc).
func startTracedProcess(name, logPath, binary string, traceGC bool, args ...string) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A binary built with -race exits at the first data race it finds (exit
	// code 66), which the harness sees as a server that exited; without
	// -race the variable means nothing.
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1 exitcode=66")
	// Its own process group: Ctrl-C reaches the harness only, which stops the
	// children in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: logFile, done: make(chan struct{})}
	if traceGC {
		// The last GODEBUG wins; the caller's settings are kept.
		cmd.Env = append(cmd.Env, "GODEBUG="+strings.TrimPrefix(os.Getenv("GODEBUG")+",gctrace=1", ","))
		p.gc = newGCTrace(logFile, time.Now())
		cmd.Stderr = p.gc
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, binary, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// pid is the child's process id, whose /proc entries are sampled.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the child has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the child to exit (SIGTERM), kills it when it does not in time, and
// closes its log. It is safe to call twice.
func (p *process) stop() {
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	_ = p.logFile.Close()
}

// tail is the end of the child's log, for error messages.
func (p *process) tail() string {
	raw, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	return tailLines(string(raw), 15)
}

// waitUntil polls ready every 100 ms until it returns nil, the child exits, the
// timeout passes or ctx ends.
func (p *process) waitUntil(ctx context.Context, timeout time.Duration, ready func() error) error {
	deadline := time.After(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%v); end of %s:\n%s", p.name, p.err, p.logPath, p.tail())
		case <-deadline:
			return fmt.Errorf("%s was not ready after %v (last: %v); end of %s:\n%s", p.name, timeout, err, p.logPath, p.tail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// httpOK is a readiness check: GET url answers 200. Serving certificates are not
// verified: they are the harness's own throwaway ones.
func httpOK(url string) func() error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // throwaway certificate
	}}
	return func() error {
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// freePort is a loopback port nothing listens on right now.
var freePort = testenv.FreePort

// loopback returns "127.0.0.1:port".
func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
