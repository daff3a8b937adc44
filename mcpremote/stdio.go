package mcpremote

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioPath is the PATH a stdio server gets (a script's #! line may need
// env to find its interpreter): the system's folders, nothing of the
// service's environment.
const stdioPath = "PATH=/usr/local/bin:/usr/bin:/bin"

// maxStderr is how much of a process's stderr reaches the log.
const maxStderr = 4 << 10

// process is a running stdio server.
type process struct {
	transport mcp.Transport
	stop      func()
}

// startProcess starts command for tenant: an empty environment but PATH, a
// folder of its own as working directory and HOME, its own process group,
// its output lines capped at maxLine and the start of its stderr logged.
func (s *Synthesizer) startProcess(command []string, tenant string, maxLine int64) (*process, error) {
	dir, err := os.MkdirTemp("", "httptools-stdio-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = []string{stdioPath, "HOME=" + dir}
	cmd.Dir = dir
	ownGroup(cmd)
	inR, inW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	log := s.cfg.Logger.With("command", command[0], "tenant", tenant)
	errLog := &stderrLog{log: log}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errLog
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", command[0], err)
	}
	inR.Close()
	outW.Close()
	log.Info("stdio server started", "pid", cmd.Process.Pid)
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		errLog.flush()
		log.Info("stdio server ended", "pid", cmd.Process.Pid, "status", fmt.Sprint(err))
		close(exited)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			inW.Close() // end of input: a well-behaved server exits
			select {
			case <-exited:
			case <-time.After(2 * time.Second):
				killGroup(cmd)
				<-exited
			}
			outR.Close()
			os.RemoveAll(dir)
		})
	}
	return &process{transport: &mcp.IOTransport{Reader: outR, Writer: inW, MaxLineLength: int(maxLine)}, stop: stop}, nil
}

// checkAlive pings the process of a session whose call timed out, and stops
// it when it does not answer within pingWait: a hung server is started
// again on the next call. It runs as the pool's background work: when stop
// is closed (Close) the ping is cancelled and nothing is logged.
func (h *Handler) checkAlive(stop <-chan struct{}, s *session) {
	ctx, cancel := stopContext(stop)
	defer cancel()
	ctx, cancelPing := context.WithTimeout(ctx, pingWait)
	defer cancelPing()
	if err := s.cs.Ping(ctx, nil); err != nil {
		select {
		case <-stop:
			return // Close shuts the session
		default:
		}
		h.syn.cfg.Logger.Warn("stdio server did not answer a ping after a call timed out: stopped", "tool", h.toolID, "command", h.ep.Command[0])
		h.syn.pool.drop(s)
	}
}

// pingWait bounds checkAlive's ping.
const pingWait = 2 * time.Second

// stderrLog logs the first maxStderr bytes a process writes to stderr, a
// line a record, and counts the rest.
type stderrLog struct {
	log     *slog.Logger
	mu      sync.Mutex
	buf     bytes.Buffer
	n       int
	dropped int
}

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := min(len(p), maxStderr-w.n)
	w.n += keep
	w.dropped += len(p) - keep
	w.buf.Write(p[:keep])
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line) // the start of a line to come
			break
		}
		w.log.Warn("stdio server stderr", "line", line[:len(line)-1])
	}
	return len(p), nil
}

func (w *stderrLog) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() > 0 {
		w.log.Warn("stdio server stderr", "line", w.buf.String())
		w.buf.Reset()
	}
	if w.dropped > 0 {
		w.log.Warn("stdio server stderr cut", "dropped_bytes", w.dropped)
	}
}
