package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
)

// PoolSize is the connection pool size of every contender's go-redis
// client; the other pool settings are go-redis defaults (see
// [ClientOptions]).
const PoolSize = 32

// PeerLease is the lease the peers and the textbook lock set: warden's
// default watchdog timeout, so every library's keys live as long.
const PeerLease = 30 * time.Second

// ClientOptions returns the go-redis options of every contender's client,
// so each library gets an equal pool of its own: PoolSize connections, no
// idle minimum, go-redis defaults for the rest (3 retries, dial 5s,
// read/write 3s, RESP3).
func ClientOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr, PoolSize: PoolSize}
}

// PoolDescription states the pool settings of [ClientOptions].
func PoolDescription() string {
	return fmt.Sprintf("one go-redis v9 client per library, PoolSize %d, MinIdleConns 0, "+
		"MaxRetries 3, timeouts dial 5s / read 3s / write 3s (go-redis defaults), RESP3; "+
		"rueidislock: one rueidis client with its defaults (auto-pipelining)", PoolSize)
}

// Mutex is one goroutine's handle on a named lock of one library.
type Mutex interface {
	// Lock blocks until the lock is held, ctx ends, or the library gives
	// up (its retry budget ran out); then it returns an error.
	Lock(ctx context.Context) error
	// Unlock releases the lock.
	Unlock(ctx context.Context) error
}

// Role says which workloads a contender takes part in.
type Role int

const (
	// RoleLock is a lock library: every workload it applies to.
	RoleLock Role = iota
	// RoleFloor is the 2xPING floor: uncontended workloads only.
	RoleFloor
	// RoleDefaults is a library with its out-of-the-box retry settings:
	// the contended workload only, where retries matter.
	RoleDefaults
	// RoleVariant is another lock of a library already measured (warden's
	// fair lock): the contended workload only, where it differs.
	RoleVariant
	// RoleFIFOFloor is the FIFO floor: the contended workload only.
	RoleFIFOFloor
)

// Uncontended tells whether a contender of role r runs the uncontended
// and parallel workloads (a, b): the libraries and the 2xPING floor.
func (r Role) Uncontended() bool { return r == RoleLock || r == RoleFloor }

// Contended tells whether a contender of role r runs the contended
// workload (c): every one but the 2xPING floor.
func (r Role) Contended() bool { return r != RoleFloor }

// Contender is one library on its own Redis client.
type Contender struct {
	Name string
	// Waits says how a blocked Lock waits for the lock.
	Waits string
	Role  Role
	// Redis is the library's go-redis client; nil for a library on
	// another client (rueidislock), whose Counter its own wrapper feeds.
	Redis   *redis.Client
	Counter *Counter

	newMutex func(name string) Mutex
	close    func(ctx context.Context) error
	// waiters, for a baseline that queues in the process, counts a
	// name's queued Locks (tests).
	waiters func(name string) int
}

// NewMutex returns a handle on the lock name for one goroutine.
func (c *Contender) NewMutex(name string) Mutex { return c.newMutex(name) }

// Close stops the library and closes its Redis client.
func (c *Contender) Close(ctx context.Context) error {
	var err error
	if c.close != nil {
		err = c.close(ctx)
	}
	if c.Redis != nil {
		err = errors.Join(err, c.Redis.Close())
	}
	return err
}

// newRedis returns a client built from ClientOptions with a Counter hooked
// in.
func newRedis(addr string) (*redis.Client, *Counter) {
	rdb := redis.NewClient(ClientOptions(addr))
	cnt := &Counter{}
	rdb.AddHook(cnt)
	return rdb, cnt
}

// Contender names, in the order NewContenders returns them.
const (
	Warden          = "warden"
	WardenFair      = "warden-fair"
	Redsync         = "redsync"
	RedsyncDefaults = "redsync-defaults"
	Redislock       = "redislock"
	Textbook        = "setnx+lua"
	Rueidislock     = "rueidislock"
	RedissonBare    = "redisson-bare"
	WardenBare      = "warden-bare"
	Floor           = "2xPING"
	FIFOFloor       = "fifo+PING"
)

// contenderMakers make the contenders, in NewContenders's order.
var contenderMakers = []struct {
	name string
	make func(string, time.Duration) (*Contender, error)
}{
	{Warden, newWardenContender}, {WardenFair, newWardenFairContender}, {Redsync, newRedsyncContender},
	{RedsyncDefaults, newRedsyncDefaultsContender}, {Redislock, newRedislockContender},
	{Rueidislock, newRueidislockContender}, {Textbook, newTextbookContender}, {RedissonBare, newRedissonBareContender},
	{WardenBare, newWardenBareContender},
	{Floor, newFloorContender}, {FIFOFloor, newFIFOFloorContender},
}

// NewContender returns the one contender called name, as NewContenders
// makes it. Close it when done.
func NewContender(addr string, retry time.Duration, name string) (*Contender, error) {
	if retry <= 0 {
		return nil, fmt.Errorf("bench: retry %v: want > 0", retry)
	}
	for _, mk := range contenderMakers {
		if mk.name == name {
			return mk.make(addr, retry)
		}
	}
	return nil, fmt.Errorf("bench: no contender %q", name)
}

// NewContenders returns every contender on the Redis at addr, each on its
// own client: warden (default options: watchdog mode, 30s), redsync and
// redislock retrying every retry, redsync with its defaults, rueidislock
// (one key, waiters woken by invalidations), the textbook lock and
// Redisson's bare RLock scripts retrying every retry, the 2xPING
// floor and the FIFO floor. Close them all when done.
func NewContenders(addr string, retry time.Duration) ([]*Contender, error) {
	var all []*Contender
	for _, mk := range contenderMakers {
		c, err := NewContender(addr, retry, mk.name)
		if err != nil {
			for _, done := range all {
				_ = done.Close(context.Background())
			}
			return nil, err
		}
		all = append(all, c)
	}
	return all, nil
}

// NewWarden returns a warden client with opts on a fresh counted go-redis
// client built from ClientOptions.
func NewWarden(addr string, opts ...client.Option) (*client.Client, *redis.Client, *Counter, error) {
	rdb, cnt := newRedis(addr)
	c, err := client.New(rdb, opts...)
	if err != nil {
		_ = rdb.Close()
		return nil, nil, nil, err
	}
	return c, rdb, cnt, nil
}

func newWardenContender(addr string, _ time.Duration) (*Contender, error) {
	c, rdb, cnt, err := NewWarden(addr)
	if err != nil {
		return nil, err
	}
	return &Contender{
		Name: Warden, Waits: "queued in the engine, woken by the unlock message (pub/sub); watchdog mode, 30s",
		Redis: rdb, Counter: cnt,
		newMutex: func(name string) Mutex { return wardenMutex{c.Lock(name)} },
		close:    c.Close,
	}, nil
}

func newWardenFairContender(addr string, _ time.Duration) (*Contender, error) {
	c, rdb, cnt, err := NewWarden(addr)
	if err != nil {
		return nil, err
	}
	return &Contender{
		Name: WardenFair, Role: RoleVariant,
		Waits: "warden's FairLock: queued in Redis in arrival order, the head woken by its own unlock message; watchdog mode, 30s",
		Redis: rdb, Counter: cnt,
		newMutex: func(name string) Mutex { return wardenMutex{c.FairLock(name)} },
		close:    c.Close,
	}, nil
}

// wardenMutex adapts a warden handle; it is the handle's own API.
type wardenMutex struct{ l *client.Lock }

func (m wardenMutex) Lock(ctx context.Context) error   { return m.l.Lock(ctx) }
func (m wardenMutex) Unlock(ctx context.Context) error { return m.l.Unlock(ctx) }

func newFloorContender(addr string, _ time.Duration) (*Contender, error) {
	rdb, cnt := newRedis(addr)
	return &Contender{
		Name: Floor, Waits: "-", Role: RoleFloor, Redis: rdb, Counter: cnt,
		newMutex: func(string) Mutex { return pingMutex{rdb} },
	}, nil
}

// pingMutex is the floor: one PING for Lock, one for Unlock, the two round
// trips any lock+unlock pays.
type pingMutex struct{ rdb *redis.Client }

func (m pingMutex) Lock(ctx context.Context) error   { return m.rdb.Ping(ctx).Err() }
func (m pingMutex) Unlock(ctx context.Context) error { return m.rdb.Ping(ctx).Err() }
