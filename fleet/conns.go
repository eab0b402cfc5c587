package fleet

import (
	"context"
	"net"
	"sync"
	"time"
)

// conns dials a cluster's connections and remembers them, so that
// disengaging the cluster closes every one: CloseIdleConnections alone
// misses an HTTP/2 connection whose cancelled watch stream the server has
// not yet reset, which would otherwise stay open until the transport's
// idle timeout.
type conns struct {
	dial func(ctx context.Context, network, address string) (net.Conn, error)

	mu     sync.Mutex
	open   map[*trackedConn]struct{}
	closed bool
}

// newConns wraps dial, or a dialer with client-go's timeouts when dial is
// nil.
func newConns(dial func(ctx context.Context, network, address string) (net.Conn, error)) *conns {
	if dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	return &conns{dial: dial, open: map[*trackedConn]struct{}{}}
}

// DialContext dials through the wrapped dialer and tracks the connection
// until it is closed; after closeAll it fails.
func (cs *conns) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := cs.dial(ctx, network, address)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, owner: cs}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	cs.open[tc] = struct{}{}
	return tc, nil
}

// closeAll closes every open connection and refuses new ones.
func (cs *conns) closeAll() {
	cs.mu.Lock()
	open := cs.open
	cs.open, cs.closed = nil, true
	cs.mu.Unlock()
	for c := range open {
		c.Conn.Close()
	}
}

type trackedConn struct {
	net.Conn
	owner *conns
	once  sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.owner.mu.Lock()
		delete(c.owner.open, c)
		c.owner.mu.Unlock()
	})
	return c.Conn.Close()
}
