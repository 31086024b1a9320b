package actors

import (
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/warden-go/warden/redisio"
)

// Registry is the client's record in the client registry: the HASH Key,
// written with Fields (field, value pairs), a seen time and the refresh
// period (redisio.RegistryBeat), refreshed every RegistryPeriod(Watchdog)
// with a TTL of Retention (at least three periods), on Redis
// (the Redis client itself, not an automatic pipeline: a write cancelled
// by Close must not reach Redis after Close deleted the record).
type Registry struct {
	Key    string
	Fields []string
	Redis  redisio.TxRedis
	// Retention is how long the record outlives the Client's last
	// refresh, so that a holder that died stays named while its locks
	// may live; below three periods, three periods.
	Retention time.Duration
}

// ttl is the record's TTL for refresh period period.
func (r *Registry) ttl(period time.Duration) time.Duration {
	return max(r.Retention, 3*period)
}

// RegistryPeriod is how often the registry record is refreshed: once per
// renewal period, a third of the watchdog timeout. Its TTL is three periods.
func RegistryPeriod(watchdog time.Duration) time.Duration { return watchdog / 3 }

// registryActor keeps the client's registry record alive: it writes it as
// the engine starts and again every period, the write made off the mailbox
// by a worker. Client.Close deletes the record once the engine has
// stopped, or marks it closed when locks it held are left in Redis.
type registryActor struct {
	cfg      *Config
	timer    clockTimer
	inflight bool
	// checked is set once the first write looked for another Client's
	// record under the same client ID.
	checked bool
	// failing is set while writes fail.
	failing failStreak
	io      sync.WaitGroup
}

var _ actor.Actor = (*registryActor)(nil)

// registryDone reports one write of the record.
type registryDone struct {
	Err error
	// Other names another live Client that wrote a record under the same
	// client ID ("host h pid p"), found before the first write.
	Other string
}

func registryProps(cfg *Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &registryActor{cfg: cfg}
	}, actor.WithDispatcher(cfg.Workers), withMailbox)
}

// Receive handles one message; every state change of the actor happens
// here.
func (a *registryActor) Receive(ctx actor.Context) {
	defer survive(a.cfg, "registry")
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.write(ctx)
	case *tick:
		if a.timer.fired(m.Gen) {
			a.write(ctx)
		}
	case *registryDone:
		a.inflight = false
		if m.Other != "" {
			a.cfg.Logger.Warn("warden: another Client, running or stopped within the last two renewal periods, "+
				"used this client ID; Clients that share one share their owners and so each other's locks: "+
				"give each its own WithClientID",
				"key", a.cfg.Registry.Key, "other", m.Other)
		}
		a.failing.note(a.cfg, m.Err, "warden: client registry write failed; retrying every period",
			"warden: client registry writes succeed again")
	case *actor.Stopping:
		a.timer.stop()
		a.io.Wait()
	}
}

// write starts one write of the record, unless the previous one is still
// running, and arms the timer for the next period.
func (a *registryActor) write(ctx actor.Context) {
	period := RegistryPeriod(a.cfg.Watchdog)
	now := a.cfg.Clock.Now()
	a.timer.set(ctx, a.cfg.Clock, now.Add(period))
	if a.inflight {
		return
	}
	a.inflight = true
	check := !a.checked
	a.checked = true
	cfg, sys, self := a.cfg, ctx.ActorSystem(), ctx.Self()
	reg := cfg.Registry
	fields := make([]string, 0, len(reg.Fields)+4)
	fields = append(fields, reg.Fields...)
	fields = append(fields, redisio.RegistrySeen, redisio.UnixMillis(now),
		redisio.RegistryBeat, strconv.FormatInt(period.Milliseconds(), 10))
	a.io.Add(1)
	cfg.Workers.Schedule(func() {
		defer a.io.Done()
		c, cancel := cfg.ioContext()
		var other string
		if check {
			// A failed look is no reason not to write: the write reports.
			other, _ = redisio.OtherClient(c, reg.Redis, reg.Key, reg.Fields, now)
		}
		err := redisio.RegisterClient(c, reg.Redis, reg.Key, fields, reg.ttl(period))
		cancel()
		sys.Root.Send(self, &registryDone{Err: err, Other: other})
	})
}
