package wardentest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrReplyLost is the error of a command whose reply LoseNextReply
// dropped: Redis ran it, its caller is told it failed, as when the
// connection breaks after the command was sent.
var ErrReplyLost = errors.New("wardentest: reply lost")

// loss is one LoseNextReply still to strike.
type loss struct {
	command string
	struck  chan struct{}
}

// LoseNextReply makes the next command named command (case does not
// matter) that one of the kit's clients sends run on Redis while its
// reply is lost: the engine gets ErrReplyLost, as when the connection
// breaks after the command left, and does not know whether it took
// effect. The engine's writes are scripts: "evalsha" (acquires, renewals,
// unlocks) is the one to name to test what a lost write does. Several
// calls queue several losses, struck in order. The returned channel is
// closed once the loss has struck. An empty command fails the test.
func (k *Kit) LoseNextReply(command string) <-chan struct{} {
	k.t.Helper()
	if strings.TrimSpace(command) == "" {
		k.t.Fatalf("wardentest: LoseNextReply: command is empty")
	}
	l := &loss{command: strings.ToLower(command), struck: make(chan struct{})}
	k.mu.Lock()
	k.losses = append(k.losses, l)
	k.mu.Unlock()
	return l.struck
}

// takeLoss removes and returns the first queued loss for command, or nil.
func (k *Kit) takeLoss(command string) *loss {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, l := range k.losses {
		if l.command == command {
			k.losses = append(k.losses[:i], k.losses[i+1:]...)
			return l
		}
	}
	return nil
}

// RestartRedis stops the kit's Redis, which breaks every connection to
// it, and starts it again on the same address, with its keys (keepData)
// or empty, as a server without persistence comes back. The time does not
// move. It returns once the engine has handled the broken connections; a
// pub/sub connection is made again after the engine's reconnect pause,
// which Advance lets pass.
func (k *Kit) RestartRedis(keepData bool) {
	k.t.Helper()
	k.advanceMu.Lock()
	defer k.advanceMu.Unlock()
	k.mr.Close()
	if !keepData {
		k.mr.FlushAll()
	}
	if err := k.mr.Restart(); err != nil {
		k.t.Fatalf("wardentest: restart the embedded Redis: %v", err)
	}
	k.mr.SetTime(k.redisNow)
	k.settle()
}

// DropPubSub closes the kit's clients' pub/sub connections, as a network
// fault would, and returns once the engine has seen it. The engine
// reconnects after its reconnect pause, which Advance lets pass. It
// returns how many connections it closed.
func (k *Kit) DropPubSub() int {
	k.t.Helper()
	k.advanceMu.Lock()
	defer k.advanceMu.Unlock()
	k.mu.Lock()
	var drop []*trackedConn
	for c := range k.conns {
		if c.pubsub {
			drop = append(drop, c)
		}
	}
	k.mu.Unlock()
	for _, c := range drop {
		_ = c.Close()
	}
	k.settle()
	return len(drop)
}

// PauseEngine stops the kit's engines for d, as a garbage collection pause
// or a SIGSTOP would: Redis's time moves on by d at once (keys expire)
// while the engines' time stands still, and then their time moves on by
// d, as Advance(d) moves it, so that what fell due during the pause
// (renewals, above all) happens late, all at once. It returns once the
// engines have handled it.
func (k *Kit) PauseEngine(d time.Duration) {
	k.t.Helper()
	if d < 0 {
		k.t.Fatalf("wardentest: PauseEngine(%v): want d >= 0", d)
	}
	k.advanceMu.Lock()
	defer k.advanceMu.Unlock()
	k.settle()
	until := k.clock.Now().Add(d)
	k.moveRedis(until)
	k.advance(until)
}

// kitHook is the go-redis hook of the kit's clients: it tracks their
// connections (for idleness and DropPubSub) and strikes LoseNextReply's
// losses.
type kitHook struct{ k *Kit }

func (h kitHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := &trackedConn{Conn: conn, k: h.k}
		h.k.mu.Lock()
		h.k.conns[c] = struct{}{}
		h.k.changeLocked()
		h.k.mu.Unlock()
		return c, nil
	}
}

func (h kitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l := h.k.takeLoss(strings.ToLower(cmd.Name()))
		err := next(ctx, cmd)
		if l == nil {
			return err
		}
		cmd.SetErr(ErrReplyLost)
		close(l.struck)
		return ErrReplyLost
	}
}

func (h kitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var (
			hit  redis.Cmder
			lost *loss
		)
		for _, cmd := range cmds {
			if l := h.k.takeLoss(strings.ToLower(cmd.Name())); l != nil {
				hit, lost = cmd, l
				break
			}
		}
		err := next(ctx, cmds)
		if lost == nil {
			return err
		}
		hit.SetErr(ErrReplyLost)
		close(lost.struck)
		if err == nil {
			err = ErrReplyLost
		}
		return err
	}
}

// trackedConn is a connection of the kit's clients to Redis. It tells the
// kit when a goroutine waits in Read with no command awaiting its reply
// (a pub/sub reader, idle until a message comes), and which connections
// carry pub/sub.
type trackedConn struct {
	net.Conn
	k *Kit
	// Guarded by k.mu: readers is how many goroutines are in Read; pending
	// is set by a write and cleared by the next read that returns data;
	// pubsub is set once a (S)SUBSCRIBE was written.
	readers int
	pending bool
	pubsub  bool
}

// subscribes reports whether b, the start of a write in RESP, is a
// SUBSCRIBE, SSUBSCRIBE or PSUBSCRIBE: its first command's name, the first
// bulk string ("*N\r\n$len\r\nname\r\n"). Only the name counts: a lock
// whose name holds "subscribe" is no pub/sub.
func subscribes(b []byte) bool {
	_, rest, ok := bytes.Cut(b, []byte("\r\n")) // "*N"
	if !ok || len(b) == 0 || b[0] != '*' {
		return false
	}
	_, rest, ok = bytes.Cut(rest, []byte("\r\n")) // "$len"
	if !ok {
		return false
	}
	name, _, ok := bytes.Cut(rest, []byte("\r\n"))
	if !ok {
		return false
	}
	switch string(bytes.ToLower(name)) {
	case "subscribe", "ssubscribe", "psubscribe":
		return true
	}
	return false
}

func (c *trackedConn) Read(b []byte) (int, error) {
	k := c.k
	k.mu.Lock()
	c.readers++
	k.changeLocked()
	k.mu.Unlock()
	n, err := c.Conn.Read(b)
	k.mu.Lock()
	c.readers--
	if n > 0 {
		c.pending = false
	}
	k.changeLocked()
	k.mu.Unlock()
	return n, err
}

func (c *trackedConn) Write(b []byte) (int, error) {
	k := c.k
	k.mu.Lock()
	c.pending = true
	if !c.pubsub && subscribes(b) {
		c.pubsub = true
	}
	k.changeLocked()
	k.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *trackedConn) Close() error {
	k := c.k
	k.mu.Lock()
	delete(k.conns, c)
	k.changeLocked()
	k.mu.Unlock()
	return c.Conn.Close()
}
