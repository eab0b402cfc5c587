package testcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// process is one running child (etcd or kube-apiserver) whose combined
// stdout and stderr are appended to a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	logFrom int64         // offset in the log where this run's output starts
	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done is closed
}

// startProcess runs bin with args in its own process group. Output is
// appended to logPath, preceded by a header line naming the command, so a
// restarted process keeps the history of earlier runs in the same file.
func startProcess(name, bin string, args []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	fmt.Fprintf(logFile, "==== %s %s\n==== %s %s\n",
		time.Now().Format(time.RFC3339Nano), name, bin, strings.Join(args, " "))

	logFrom, err := logFile.Seek(0, io.SeekEnd)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("seek %s log: %w", name, err)
	}

	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a terminal's Ctrl-C reaches only the parent,
		// which then stops the children in order.
		Setpgid: true,
		// Kill the child if the thread that started it dies, e.g. when the
		// test binary panics or is killed by the go test timeout. The Go
		// runtime does not end its threads unless a goroutine exits while
		// locked to one, which this package never does.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{
		name:    name,
		cmd:     cmd,
		logPath: logPath,
		logFile: logFile,
		logFrom: logFrom,
		done:    make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes how the process ended; only valid once exited.
func (p *process) exitError() error {
	if p.waitErr == nil {
		return fmt.Errorf("%s exited with status 0", p.name)
	}
	return fmt.Errorf("%s exited: %w", p.name, p.waitErr)
}

// signal sends sig to the process group of p.
func (p *process) signal(sig syscall.Signal) error {
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s (pid %d) with %v: %w", p.name, p.cmd.Process.Pid, sig, err)
	}
	return nil
}

// stop sends SIGTERM and waits up to grace for the process to exit, then
// sends SIGKILL and waits for it. It returns an error only if the process
// could not be killed; how the process exited is not an error.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	}
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// tail returns the last n lines of the process log.
func (p *process) tail(n int) string {
	return tailFile(p.logPath, n)
}

// logContains reports whether the output of this run of the process
// (not of earlier runs logged to the same file) contains s.
func (p *process) logContains(s string) bool {
	return strings.Contains(readFrom(p.logPath, p.logFrom), s)
}

// tailFile returns the last n lines of the file at path, or a note saying
// why it could not be read.
func tailFile(path string, n int) string {
	data := readTail(path, 256<<10)
	lines := strings.Split(strings.TrimRight(data, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// readTail returns up to n bytes from the end of the file at path.
func readTail(path string, n int64) string {
	return readRange(path, -n)
}

// readFrom returns the file at path from offset on, at most its last 1 MiB.
func readFrom(path string, offset int64) string {
	return readRange(path, offset)
}

// readRange reads the file at path from offset to its end. A negative
// offset counts back from the end. At most 1 MiB is returned.
func readRange(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot stat %s: %v)", path, err)
	}
	size := info.Size()
	if offset < 0 {
		offset += size
	}
	offset = max(offset, size-1<<20, 0)
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.NewSectionReader(f, offset, size-offset)); err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	return buf.String()
}
