package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/redisio"
)

// netError is a simulated network failure; Timeout tells a lost request or
// reply (the call gave up) from a reset connection.
type netError struct {
	msg     string
	timeout bool
}

func (e *netError) Error() string   { return e.msg }
func (e *netError) Timeout() bool   { return e.timeout }
func (e *netError) Temporary() bool { return true }

var _ net.Error = (*netError)(nil)

var (
	errTimedOut = &netError{msg: "sim: i/o timeout", timeout: true}
	errReset    = &netError{msg: "sim: connection reset by peer"}
	errStopped  = errors.New("sim: run over")
)

// tapChannel is published on after a command, so the tap has read every
// message the command published once it sees this one.
const tapChannel = "warden-sim:tap"

// redisSim is the simulated Redis: a miniredis server whose clock is the
// simulation's, run by the driver one command (or pipeline) at a time, and
// the network between it and the clients, whose delays and faults the
// seed draws.
type redisSim struct {
	w    *world
	m    *miniredis.Miniredis
	exec *redis.Client
	// scripts runs the production scripts setUp needs.
	scripts *redisio.Scripts
	o       *Options
	// synced is the simulated time miniredis's TTLs were last moved to.
	synced time.Duration
	// epoch counts restarts: a call or message of an older epoch is lost.
	epoch   int
	clients []*client
	faults  []Fault
	// setUp initialises what the workload needs (after a restart too: an
	// application sets its semaphores' permits again).
	setUp func() error

	// tap reads every message published at Redis; readTap hands them
	// over on published, a command's worth at a time.
	tap       *miniredis.Subscriber
	published chan []miniredis.PubsubPmessage
	tapDone   chan struct{}
}

func newRedisSim(w *world, o *Options) (*redisSim, error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("sim: start miniredis: %w", err)
	}
	m.SetTime(epoch)
	scripts, err := redisio.NewScriptsWithToken("publish", "simredis")
	if err != nil {
		m.Close()
		return nil, err
	}
	srv := m.Server()
	r := &redisSim{w: w, m: m, scripts: scripts, o: o, published: make(chan []miniredis.PubsubPmessage),
		tapDone: make(chan struct{})}
	r.exec = redis.NewClient(&redis.Options{
		Addr:       "127.0.0.1:1", // an address, not a name: go-redis may look a name up
		MaxRetries: -1,
		PoolSize:   1,
		Protocol:   2,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			c, s := net.Pipe()
			srv.ServeConn(s)
			return c, nil
		},
	})
	r.tap = m.NewSubscriber()
	r.tap.Psubscribe("*")
	go r.readTap()
	return r, nil
}

// readTap collects what scripts publish, in order (miniredis hands each
// message over as it is published, so a command blocks until it is read),
// and sends it to the driver when the tap marker comes.
func (r *redisSim) readTap() {
	defer close(r.tapDone)
	var batch []miniredis.PubsubPmessage
	for msg := range r.tap.Pmessages() {
		if msg.Channel == tapChannel {
			r.published <- batch
			batch = nil
			continue
		}
		batch = append(batch, msg)
	}
}

// lastPublished returns what the last command published.
func (r *redisSim) lastPublished() []miniredis.PubsubPmessage {
	r.m.Publish(tapChannel, "")
	return <-r.published
}

func (r *redisSim) close() {
	_ = r.exec.Close()
	r.m.Close()
	r.tap.Close()
	<-r.tapDone
}

// syncClock moves miniredis's TTLs to the simulated time.
func (r *redisSim) syncClock() {
	if d := r.w.now - r.synced; d > 0 {
		r.m.FastForward(d)
		r.synced = r.w.now
	}
	r.m.SetTime(r.w.epochNow())
}

// latency draws one message's trip across the network.
func (r *redisSim) latency() time.Duration {
	if r.o.has(FaultLatency) {
		return r.w.jitter(0, r.o.MaxLatency)
	}
	return r.o.Latency
}

// newClient returns cl's go-redis client: every command it sends goes to
// the driver (a hook, with nothing dialled).
func (r *redisSim) newClient(cl *client) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, Protocol: 2})
	c.AddHook(hook{r: r, cl: cl})
	return c
}

type hook struct {
	r  *redisSim
	cl *client
}

func (h hook) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("sim: a simulated client dials nothing")
	}
}

func (h hook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.r.call(ctx, h.cl, []redis.Cmder{cmd})
	}
}

func (h hook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.r.call(ctx, h.cl, cmds)
	}
}

// call is one command or pipeline of a client, in flight.
type call struct {
	cl   *client
	cmds []redis.Cmder
	job  *job
	// deadline is when the caller gives up, as its context says.
	deadline time.Duration
	epoch    int
	done     bool
	err      error
}

// deadline is when the running job's call with ctx gives up, in simulated
// time. The context's deadline is on the wall clock, set by the engine a
// moment before the job's first call with it: the time left, rounded up to
// 100 ms, is the bound the engine asked for (IOTimeout; a renewal's two
// thirds of the watchdog, with the default watchdog) whenever that moment
// was under 100 ms of wall time. The job keeps the bound in simulated time,
// so that a later call with the same context (a script's EVAL after
// NOSCRIPT), made after the driver spent any wall time on other work, has
// what is left of it, as on a real clock.
func (r *redisSim) deadline(ctx context.Context) time.Duration {
	w := r.w
	dl, ok := ctx.Deadline()
	if !ok {
		return w.now + redisio.IOTimeout
	}
	if j := w.current; !j.ctxDeadline.Equal(dl) {
		const grain = 100 * time.Millisecond
		left := time.Until(dl)
		j.ctxDeadline, j.simDeadline = dl, w.now+max(grain, (left+grain-1)/grain*grain)
	}
	return w.current.simDeadline
}

// call sends cmds and parks the calling job until the reply or the failure
// the simulation decides comes back.
func (r *redisSim) call(ctx context.Context, cl *client, cmds []redis.Cmder) error {
	w := r.w
	if w.teardown.Load() || w.current == nil {
		return fail(cmds, errStopped)
	}
	c := &call{cl: cl, cmds: cmds, job: w.current, deadline: r.deadline(ctx), epoch: r.epoch}
	r.send(c)
	w.park()
	if !c.done {
		return fail(cmds, errStopped)
	}
	return c.err
}

func fail(cmds []redis.Cmder, err error) error {
	for _, c := range cmds {
		c.SetErr(err)
	}
	return err
}

func (r *redisSim) send(c *call) {
	w := r.w
	switch {
	case c.cl.partitioned:
		r.giveUp(c)
	case w.chance(r.o.rate(FaultLostRequest)):
		r.note(Fault{Kind: FaultLostRequest, Client: c.cl.id, From: w.now, To: w.now, Detail: cmdNames(c.cmds)})
		r.giveUp(c)
	default:
		w.after(r.latency(), nil, func() { r.arrive(c) })
	}
}

// arrive runs c at Redis and sends its reply back, unless the network
// loses it.
func (r *redisSim) arrive(c *call) {
	w := r.w
	switch {
	case c.epoch != r.epoch:
		r.answer(c, w.now, errReset)
		return
	case c.cl.partitioned:
		r.giveUp(c)
		return
	}
	r.execute(c.cl.id, c.cmds)
	if w.chance(r.o.rate(FaultLostReply)) {
		r.note(Fault{Kind: FaultLostReply, Client: c.cl.id, From: w.now, To: w.now, Detail: cmdNames(c.cmds)})
		r.giveUp(c)
		return
	}
	at := w.now + r.latency()
	if at > c.deadline {
		r.giveUp(c)
		return
	}
	w.at(at, c.cl, func() {
		switch {
		case c.epoch != r.epoch:
			r.answer(c, w.now, errReset)
		case c.cl.partitioned:
			r.giveUp(c)
		default:
			c.done = true
			c.err = firstErr(c.cmds)
			w.tr.add(w.now, "c%d reply %s", c.cl.id, c.err)
			w.ready(c.job)
		}
	})
}

// giveUp answers c with a timeout when its caller's bound runs out.
func (r *redisSim) giveUp(c *call) {
	r.answer(c, c.deadline, errTimedOut)
}

func (r *redisSim) answer(c *call, at time.Duration, err error) {
	r.w.at(at, c.cl, func() {
		if c.done {
			return
		}
		c.done = true
		c.err = fail(c.cmds, err)
		r.w.tr.add(r.w.now, "c%d error %v", c.cl.id, err)
		r.w.ready(c.job)
	})
}

func firstErr(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return err
		}
	}
	return nil
}

// execute runs cmds at Redis now, then hands what they published to the
// subscribed clients.
func (r *redisSim) execute(from int, cmds []redis.Cmder) {
	r.syncClock()
	ctx := context.Background()
	if len(cmds) == 1 {
		_ = r.exec.Process(ctx, cmds[0])
	} else {
		_, _ = r.exec.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, c := range cmds {
				_ = p.Process(ctx, c)
			}
			return nil
		})
	}
	for _, c := range cmds {
		r.w.tr.add(r.w.now, "c%d exec %s", from, traceCmd(c))
	}
	for _, msg := range r.lastPublished() {
		r.w.tr.add(r.w.now, "publish %s %s", msg.Channel, msg.Message)
		for _, cl := range r.clients {
			cl.ps.message(msg.Channel, msg.Message)
		}
	}
}

// restart loses Redis's data and every connection.
func (r *redisSim) restart() {
	r.epoch++
	r.syncClock()
	r.m.FlushAll()
	_ = r.exec.ScriptFlush(context.Background()).Err()
	if err := r.setUp(); err != nil {
		panic(err)
	}
	for _, cl := range r.clients {
		cl.ps.broken(errReset)
	}
}

// note records the fault f, injected now.
func (r *redisSim) note(f Fault) {
	r.faults = append(r.faults, f)
	r.w.tr.add(r.w.now, "fault %s c%d %v..%v %s", f.Kind, f.Client, f.From, f.To, f.Detail)
}

// cmdNames names the commands of a call for a fault's detail.
func cmdNames(cmds []redis.Cmder) string {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name()
	}
	return strings.Join(names, ",")
}

// traceCmd is a command and its reply, with a script's body left out.
func traceCmd(c redis.Cmder) string {
	s := c.String()
	if c.Name() == "eval" {
		res := ""
		if i := strings.LastIndex(s, ": "); i >= 0 {
			res = s[i:]
		}
		s = fmt.Sprint("eval <script> ", c.Args()[2:], res)
	}
	return s
}
