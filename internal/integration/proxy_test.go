//go:build integration

package integration

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// tcpProxy forwards TCP connections to a target address and can break
// them the two ways a network does: cut every connection (both sockets
// closed, as a restarted load balancer does), or stall them (no byte
// forwarded either way, every socket kept open: a half-open connection, a
// middlebox that lost its state). Either applies to the connections open
// at the time; later ones are forwarded normally.
type tcpProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[*proxied]struct{}
	closed bool
}

// proxied is one forwarded connection.
type proxied struct {
	client, server net.Conn
	stalled        chan struct{} // closed when the connection stalls
	stallOnce      sync.Once
	done           chan struct{} // closed when the connection is closed
	doneOnce       sync.Once
}

// newTCPProxy starts a proxy in front of target (host:port) that runs
// until the test ends.
func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[*proxied]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// config returns a copy of cfg that reaches the server through the proxy;
// http1 restricts it to HTTP/1.1, one connection per watch.
func (p *tcpProxy) config(t *testing.T, cfg *rest.Config, http1 bool) *rest.Config {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	cfg.Host = u.String()
	if http1 {
		cfg.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	return cfg
}

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		pc := &proxied{client: c, server: s, stalled: make(chan struct{}), done: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			pc.close()
			return
		}
		p.conns[pc] = struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pump(pc, c, s)
		go p.pump(pc, s, c)
	}
}

// pump copies from src to dst until either fails or the connection is
// closed. Once the connection stalls it forwards nothing more, and leaves
// both sockets open until the connection is closed.
func (p *tcpProxy) pump(pc *proxied, src, dst net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-pc.stalled:
			<-pc.done
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			select {
			case <-pc.stalled: // stalled meanwhile: say nothing to the other side
				<-pc.done
			default:
				if !errors.Is(err, io.EOF) {
					p.forget(pc)
				} else if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite() // the other direction goes on
				}
			}
			return
		}
	}
}

func (pc *proxied) close() {
	pc.doneOnce.Do(func() {
		close(pc.done)
		pc.client.Close()
		pc.server.Close()
	})
}

// forget closes pc and drops it from the open connections. (A connection
// one side has half-closed stays until it is closed, so that close finds
// it.)
func (p *tcpProxy) forget(pc *proxied) {
	pc.close()
	p.mu.Lock()
	delete(p.conns, pc)
	p.mu.Unlock()
}

// stall stops forwarding on every open connection and returns how many.
func (p *tcpProxy) stall() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.conns {
		pc.stallOnce.Do(func() { close(pc.stalled) })
	}
	return len(p.conns)
}

// cut closes every open connection and returns how many.
func (p *tcpProxy) cut() int {
	p.mu.Lock()
	conns := make([]*proxied, 0, len(p.conns))
	for pc := range p.conns {
		conns = append(conns, pc)
	}
	p.mu.Unlock()
	for _, pc := range conns {
		p.forget(pc)
	}
	return len(conns)
}

func (p *tcpProxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := make([]*proxied, 0, len(p.conns))
	for pc := range p.conns {
		conns = append(conns, pc)
	}
	p.conns = map[*proxied]struct{}{}
	p.mu.Unlock()
	p.ln.Close()
	for _, pc := range conns {
		pc.close()
	}
	p.wg.Wait()
}

// watchTimes records when each plain watch of a collection was sent.
type watchTimes struct {
	mu    sync.Mutex
	times []time.Time
}

// wrap returns cfg with its watch requests timed.
func (w *watchTimes) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			q := req.URL.Query()
			if podsCollection.MatchString(req.URL.Path) && q.Get("watch") == "true" && q.Get("sendInitialEvents") != "true" {
				w.mu.Lock()
				w.times = append(w.times, time.Now())
				w.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// firstAfter returns the time of the first watch sent after t.
func (w *watchTimes) firstAfter(t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wt := range w.times {
		if wt.After(t) {
			return wt, true
		}
	}
	return time.Time{}, false
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
