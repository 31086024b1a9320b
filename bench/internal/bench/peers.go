package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// peerRetryBudget is how long one blocking Lock of a peer retries before
// the library gives up (the workload then asks again): redsync's WithTries
// and redislock's LimitRetry are set to this over the retry delay.
const peerRetryBudget = 10 * time.Second

// errNotHeld is a peer's unlock that found the lock gone or taken.
var errNotHeld = errors.New("bench: unlock: lock not held")

// gaveUp reports whether err is a peer library giving up after its retry
// budget, rather than a failure.
func gaveUp(err error) bool {
	var taken *redsync.ErrTaken
	return errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) || errors.Is(err, redislock.ErrNotObtained)
}

func retryTries(retry time.Duration) int { return max(1, int(peerRetryBudget/retry)) }

func newRedsyncContender(addr string, retry time.Duration) (*Contender, error) {
	rdb, cnt := newRedis(addr)
	rs := redsync.New(goredis.NewPool(rdb))
	tries := retryTries(retry)
	return &Contender{
		Name: Redsync,
		Waits: fmt.Sprintf("redsync.WithRetryDelay(%v), WithTries(%d), WithExpiry(%v); SET NX, "+
			"and a release script after every failed try", retry, tries, PeerLease),
		Redis: rdb, Counter: cnt,
		newMutex: func(name string) Mutex {
			return redsyncMutex{rs.NewMutex(name, redsync.WithRetryDelay(retry), redsync.WithTries(tries),
				redsync.WithExpiry(PeerLease))}
		},
	}, nil
}

func newRedsyncDefaultsContender(addr string, _ time.Duration) (*Contender, error) {
	rdb, cnt := newRedis(addr)
	rs := redsync.New(goredis.NewPool(rdb))
	return &Contender{
		Name:  RedsyncDefaults,
		Waits: "redsync defaults: 32 tries, retry delay rand(50ms, 250ms), expiry 8s",
		Role:  RoleDefaults, Redis: rdb, Counter: cnt,
		newMutex: func(name string) Mutex { return redsyncMutex{rs.NewMutex(name)} },
	}, nil
}

// redsyncMutex adapts a redsync mutex (one pool: the quorum is 1).
type redsyncMutex struct{ m *redsync.Mutex }

func (m redsyncMutex) Lock(ctx context.Context) error { return m.m.LockContext(ctx) }

func (m redsyncMutex) Unlock(ctx context.Context) error {
	ok, err := m.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errNotHeld
	}
	return err
}

func newRedislockContender(addr string, retry time.Duration) (*Contender, error) {
	rdb, cnt := newRedis(addr)
	locker := redislock.New(rdb)
	tries := retryTries(retry)
	return &Contender{
		Name: Redislock,
		Waits: fmt.Sprintf("redislock.LimitRetry(redislock.LinearBackoff(%v), %d), ttl %v",
			retry, tries, PeerLease),
		Redis: rdb, Counter: cnt,
		newMutex: func(name string) Mutex {
			return &redislockMutex{locker: locker, name: name, retry: retry, tries: tries}
		},
	}, nil
}

// redislockMutex adapts bsm/redislock: Obtain with a fresh retry strategy
// per call (LimitRetry counts its attempts), Release.
type redislockMutex struct {
	locker *redislock.Client
	name   string
	retry  time.Duration
	tries  int
	held   *redislock.Lock
}

func (m *redislockMutex) Lock(ctx context.Context) error {
	l, err := m.locker.Obtain(ctx, m.name, PeerLease, &redislock.Options{
		RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(m.retry), m.tries),
	})
	if err != nil {
		return err
	}
	m.held = l
	return nil
}

func (m *redislockMutex) Unlock(ctx context.Context) error {
	l := m.held
	m.held = nil
	return l.Release(ctx)
}

// compareAndDelete is the textbook unlock: delete the key only if it still
// holds our token.
var compareAndDelete = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

func newTextbookContender(addr string, retry time.Duration) (*Contender, error) {
	rdb, cnt := newRedis(addr)
	prefix := uuid.NewString() + ":"
	var tokens atomic.Uint64
	return &Contender{
		Name: Textbook,
		Waits: fmt.Sprintf("SET key token NX PX %d, retried every %v; unlock: compare-and-delete Lua (EVALSHA)",
			PeerLease.Milliseconds(), retry),
		Redis: rdb, Counter: cnt,
		newMutex: func(name string) Mutex {
			return &textbookMutex{rdb: rdb, name: name, retry: retry,
				token: func() string { return prefix + strconv.FormatUint(tokens.Add(1), 10) }}
		},
	}, nil
}

// textbookMutex is the plain Redis lock: SET NX PX with a unique token,
// a sleep between tries, and a compare-and-delete script to unlock.
type textbookMutex struct {
	rdb   *redis.Client
	name  string
	retry time.Duration
	token func() string
	held  string
	timer *time.Timer
}

func (m *textbookMutex) Lock(ctx context.Context) error {
	tok := m.token()
	lease := strconv.FormatInt(PeerLease.Milliseconds(), 10)
	for {
		err := m.rdb.Do(ctx, "set", m.name, tok, "nx", "px", lease).Err()
		if err == nil {
			m.held = tok
			return nil
		}
		if !errors.Is(err, redis.Nil) {
			return err
		}
		if err := pause(ctx, &m.timer, m.retry); err != nil {
			return err
		}
	}
}

func (m *textbookMutex) Unlock(ctx context.Context) error {
	n, err := compareAndDelete.Run(ctx, m.rdb, []string{m.name}, m.held).Int64()
	if err == nil && n != 1 {
		err = errNotHeld
	}
	return err
}

// pause waits d on *t (made on first use, then reused) or until ctx ends:
// the retry delay of a polling contender's refused acquire.
func pause(ctx context.Context, t **time.Timer, d time.Duration) error {
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	select {
	case <-ctx.Done():
		(*t).Stop()
		return ctx.Err()
	case <-(*t).C:
		return nil
	}
}
