// Package faultproxy is a small fault-injecting TCP proxy for tests.
//
// A [Proxy] listens on a free 127.0.0.1 port and forwards every accepted
// connection to a fixed upstream address, copying bytes in both directions.
// Between the two ends it can inject the network faults that matter for a
// Redis client:
//
//   - lost replies: [Proxy.DropNextReply] discards the next chunk of data
//     that the upstream sends and closes that connection, so the command HAS
//     been executed by the server but the client never learns the result;
//   - dropped connections: [Proxy.CloseAll];
//   - an unreachable server: [Proxy.Block];
//   - a slow network: [Proxy.SetLatency].
//
// Connections are closed with an ordinary close (FIN), so a client reading
// from one sees io.EOF. go-redis treats io.EOF as retryable, which is exactly
// what lets a lost reply turn into a second execution of the same command.
//
// Everything the proxy starts is torn down by a t.Cleanup registered in
// [New], which waits for all of the proxy's goroutines to exit.
package faultproxy

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	// dialTimeout bounds each connection attempt to the upstream.
	dialTimeout = 2 * time.Second

	// bufSize is the size of the forwarding buffer per direction.
	bufSize = 32 << 10
)

// Proxy is a fault-injecting TCP proxy to a single upstream address.
// All methods are safe for concurrent use.
type Proxy struct {
	upstream string
	ln       net.Listener

	ctx    context.Context // cancelled by Close; aborts dials and delays
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loop and all per-connection goroutines

	latency atomic.Int64 // per-chunk delay, in nanoseconds
	drops   atomic.Int64 // armed one-shot reply drops
	chunks  atomic.Int64 // chunks forwarded, either way

	mu      sync.Mutex
	conns   map[*link]struct{}
	blocked bool
	closed  bool
}

// link is one proxied connection: the accepted client side and, once dialed,
// its upstream side.
type link struct {
	client   net.Conn
	upstream net.Conn // nil until dialed; guarded by Proxy.mu
	dead     bool     // set once closed; guarded by Proxy.mu
}

// New starts a proxy on 127.0.0.1 with a free port that forwards to
// upstream (host:port). The proxy is closed when t finishes; see
// [Proxy.Close].
func New(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultproxy: listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		upstream: upstream,
		ln:       ln,
		ctx:      ctx,
		cancel:   cancel,
		conns:    make(map[*link]struct{}),
	}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.Close)
	return p
}

// Addr returns the address clients should connect to, as "127.0.0.1:port".
func (p *Proxy) Addr() string {
	return p.ln.Addr().String()
}

// DropNextReply arms a one-shot fault: the next chunk of data read from the
// upstream on any connection is discarded and that connection (both sides)
// is closed. The server has executed the command; the client sees its reply
// lost (io.EOF) and may retry it on a new connection.
//
// Note that a new go-redis connection sends a handshake (HELLO) whose reply
// also counts; establish the client's connection first (e.g. with a PING)
// when the drop must hit a particular command.
func (p *Proxy) DropNextReply() {
	p.DropNextReplies(1)
}

// DropNextReplies arms n one-shot reply drops (see [Proxy.DropNextReply]).
// Each drop consumes one upstream chunk and closes one connection. Calls
// accumulate; n <= 0 is a no-op.
func (p *Proxy) DropNextReplies(n int) {
	if n > 0 {
		p.drops.Add(int64(n))
	}
}

// CloseAll closes every current connection, discarding any data in flight.
// New connections are still accepted.
func (p *Proxy) CloseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeAllLocked()
}

// SetLatency delays every chunk forwarded in either direction by d.
// Zero (or negative) d removes the delay. It applies to chunks read after
// the call.
func (p *Proxy) SetLatency(d time.Duration) {
	p.latency.Store(int64(max(d, 0)))
}

// Block makes the upstream unreachable (true) or reachable again (false).
// While blocked, existing connections are closed and new ones are accepted
// and closed immediately.
func (p *Proxy) Block(blocked bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = blocked
	if blocked {
		p.closeAllLocked()
	}
}

// Conns returns the number of currently proxied client connections
// (including ones whose upstream is still being dialed).
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Quiet waits, up to max, until no data has passed the proxy for d: the
// handshakes and replies of connections just opened are through, so the
// next armed drop hits the next command. It reports whether that happened.
func (p *Proxy) Quiet(d, max time.Duration) bool {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		before := p.chunks.Load()
		time.Sleep(d)
		if p.chunks.Load() == before {
			return true
		}
	}
	return false
}

// Close stops the proxy: it closes the listener and every connection and
// waits for all of the proxy's goroutines to exit. It is called
// automatically when the test finishes and is safe to call more than once.
func (p *Proxy) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.cancel()
		_ = p.ln.Close()
		p.closeAllLocked()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// acceptLoop accepts client connections until the listener is closed.
func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient failure (e.g. EMFILE): back off briefly.
			if !p.sleep(10 * time.Millisecond) {
				return
			}
			continue
		}

		p.mu.Lock()
		if p.closed || p.blocked {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		l := &link{client: c}
		p.conns[l] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()

		go p.serve(l)
	}
}

// serve dials the upstream for l and forwards data both ways until either
// side fails or the link is closed.
func (p *Proxy) serve(l *link) {
	defer p.wg.Done()
	defer p.closeLink(l)

	d := net.Dialer{Timeout: dialTimeout}
	up, err := d.DialContext(p.ctx, "tcp", p.upstream)
	if err != nil {
		return
	}
	p.mu.Lock()
	if l.dead {
		p.mu.Unlock()
		_ = up.Close()
		return
	}
	l.upstream = up
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		p.pipe(l, l.client, up, false)
	}()
	go func() {
		defer wg.Done()
		p.pipe(l, up, l.client, true)
	}()
	wg.Wait()
}

// pipe copies chunks from src to dst, applying latency and, for the
// upstream-to-client direction (reply), armed reply drops. When it returns,
// the whole link has been closed so the other direction stops too.
func (p *Proxy) pipe(l *link, src, dst net.Conn, reply bool) {
	defer p.closeLink(l)
	buf := make([]byte, bufSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if reply && p.takeDrop() {
				return // discard the chunk; the deferred close drops the link
			}
			if d := time.Duration(p.latency.Load()); d > 0 && !p.sleep(d) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			p.chunks.Add(1)
		}
		if err != nil {
			return
		}
	}
}

// takeDrop consumes one armed reply drop, reporting whether there was one.
func (p *Proxy) takeDrop() bool {
	for {
		n := p.drops.Load()
		if n <= 0 {
			return false
		}
		if p.drops.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// sleep waits for d or until the proxy is closed, reporting whether the
// full delay elapsed.
func (p *Proxy) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.ctx.Done():
		return false
	}
}

// closeLink closes both sides of l and forgets it.
func (p *Proxy) closeLink(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeLinkLocked(l)
}

// closeLinkLocked is closeLink for callers holding p.mu. Closing a link
// twice is harmless.
func (p *Proxy) closeLinkLocked(l *link) {
	if l.dead {
		return
	}
	l.dead = true
	_ = l.client.Close()
	if l.upstream != nil {
		_ = l.upstream.Close()
	}
	delete(p.conns, l)
}

// closeAllLocked closes every tracked link. The caller holds p.mu.
func (p *Proxy) closeAllLocked() {
	for l := range p.conns {
		p.closeLinkLocked(l)
	}
}
