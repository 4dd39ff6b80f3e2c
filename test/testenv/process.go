package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a control plane component running as a child process of the test
// binary, in its own process group, with its output in LogPath.
type Process struct {
	// Name is the component ("kube-controller-manager", "kueue-manager").
	Name string
	// LogPath is the file with the component's stdout and stderr; it is kept when
	// Env.KeepLogs is set (print it when a test fails).
	LogPath string

	cmd      *exec.Cmd
	done     chan struct{}
	err      error
	stopOnce sync.Once
	stopErr  error
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop ends the process group (SIGTERM, SIGKILL after 20s) and waits for it. It is
// safe to call more than once and after the process exited on its own.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
			p.stopErr = fmt.Errorf("%s did not stop within 20s of SIGTERM; killed (log: %s)", p.Name, p.LogPath)
		}
	})
	return p.stopErr
}

// Tail is the last n lines of the log, for failure messages.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls cond every 100ms until it holds, the process exits, ctx ends or the
// timeout passes; the error names what was awaited and shows the log's tail.
func (p *Process) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.After(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before %s; log %s:\n%s", p.Name, p.err, what, p.LogPath, p.Tail(40))
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("%s: no %s after %s (last error: %v); log %s:\n%s", p.Name, what, timeout, last, p.LogPath, p.Tail(40))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitReady waits up to two minutes for the process's /readyz on probeAddr to
// answer 200, and stops the process if it never does.
func (p *Process) waitReady(ctx context.Context, what, probeAddr string) error {
	if err := p.waitFor(ctx, 2*time.Minute, what, func() (bool, error) {
		resp, err := http.Get("http://" + probeAddr + "/readyz")
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet: polled again
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		return errors.Join(err, p.Stop())
	}
	return nil
}

// children are the processes an Env started, and the directory of their logs and
// files.
type children struct {
	mu     sync.Mutex
	procs  []*Process
	tmpDir string
	// keepLogs is set by KeepLogs.
	keepLogs bool
}

// KeepLogs makes Stop leave the components' logs and files (LogDir) in place, so
// that a failed suite can point at them.
func (e *Env) KeepLogs() { e.children.mu.Lock(); e.children.keepLogs = true; e.children.mu.Unlock() }

// LogDir is the directory of the components' logs, configuration files and
// certificates; Stop removes it unless KeepLogs was called.
func (e *Env) LogDir() (string, error) { return e.children.dir() }

// Processes are the components started so far, in start order.
func (e *Env) Processes() []*Process {
	e.children.mu.Lock()
	defer e.children.mu.Unlock()
	return slices.Clone(e.children.procs)
}

func (c *children) dir() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tmpDir == "" {
		d, err := os.MkdirTemp("", "kueue-guard-controlplane-")
		if err != nil {
			return "", err
		}
		c.tmpDir = d
	}
	return c.tmpDir, nil
}

// start runs the binary in its own process group. The group is signalled when ctx
// ends, and the kernel kills the process if the test binary dies first, so that no
// component outlives the test.
func (c *children) start(ctx context.Context, name, path string, args []string, logPath string) (*Process, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s missing: run `make testbin`: %w", path, err)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== %s %s %s\n", time.Now().Format(time.RFC3339Nano), path, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// remove forgets a stopped process (Kueue.Restart replaces its process).
func (c *children) remove(p *Process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs = slices.DeleteFunc(c.procs, func(q *Process) bool { return q == p })
}

// stop stops every process, last started first, and removes the directory unless
// logs are kept.
func (c *children) stop() error {
	c.mu.Lock()
	procs, dir, keep := slices.Clone(c.procs), c.tmpDir, c.keepLogs
	c.mu.Unlock()
	var err error
	for _, proc := range slices.Backward(procs) {
		err = errors.Join(err, proc.Stop())
	}
	if dir != "" && !keep {
		err = errors.Join(err, os.RemoveAll(dir))
	}
	return err
}

// setParentDeathSignal asks Linux to SIGKILL the child when the test binary exits
// without stopping it (a timeout panic, a kill). SysProcAttr.Pdeathsig exists only
// on Linux; this file builds everywhere the rest of testenv does.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	if f := reflect.ValueOf(attr).Elem().FieldByName("Pdeathsig"); f.IsValid() && f.CanSet() {
		f.Set(reflect.ValueOf(syscall.SIGKILL))
	}
}

// KeepLogsOn keeps the components' logs when err is not nil (a suite whose
// control plane could not start), and returns err.
func (e *Env) KeepLogsOn(err error) error {
	if err != nil {
		e.KeepLogs()
	}
	return err
}

// LogSummary names every component's log and shows its last lines, for the
// report of a failed spec.
func (e *Env) LogSummary() string {
	var b strings.Builder
	if d, err := e.LogDir(); err == nil {
		fmt.Fprintf(&b, "logs in %s\n", d)
	}
	for _, p := range e.Processes() {
		fmt.Fprintf(&b, "%s: %s\n%s\n\n", p.Name, p.LogPath, p.Tail(30))
	}
	return b.String()
}
