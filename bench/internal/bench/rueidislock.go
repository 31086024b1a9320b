package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// newRueidislockContender returns rueidislock on one Redis: one key per
// lock (KeyMajority 1), its own rueidis client (automatic pipelining on
// one connection, client-side-caching invalidations wake the waiters),
// and its keys kept for PeerLease, extended by its own goroutine every
// half of it. retry is not used: a blocked Lock waits for an
// invalidation, not a timer.
func newRueidislockContender(addr string, _ time.Duration) (*Contender, error) {
	cnt := &Counter{}
	locker, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:  1,
		KeyValidity:  PeerLease,
		ClientBuilder: func(opt rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(opt)
			if err != nil {
				return nil, err
			}
			return countingClient{Client: c, cnt: cnt}, nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: %w", err)
	}
	return &Contender{
		Name: Rueidislock,
		Waits: fmt.Sprintf("rueidislock KeyMajority 1, KeyValidity %v (extended every %v); a refused waiter waits for "+
			"the key's client-side-caching invalidation; one rueidis client (auto-pipelining), not go-redis: "+
			"cmds counted by a wrapper of its client, trips = cmds", PeerLease, PeerLease/2),
		Counter: cnt,
		newMutex: func(name string) Mutex {
			return &rueidisMutex{locker: locker, name: name}
		},
		close: func(context.Context) error {
			locker.Close()
			return nil
		},
	}, nil
}

// countingClient counts the commands rueidislock sends through its client,
// one round trip each (rueidis pipelines them with other goroutines'
// commands on one connection, which the count cannot see).
type countingClient struct {
	rueidis.Client
	cnt *Counter
}

func (c countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.cnt.add(1)
	return c.Client.Do(ctx, cmd)
}

func (c countingClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.cnt.add(len(multi))
	return c.Client.DoMulti(ctx, multi...)
}

func (c countingClient) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c.cnt.add(1)
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c countingClient) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	c.cnt.add(len(multi))
	return c.Client.DoMultiCache(ctx, multi...)
}

// rueidisMutex adapts rueidislock. Its lock lasts as long as the context
// it was taken with, so each hold gets a context of its own: the caller's
// ctx bounds the wait only, and Unlock cancels the hold's context, which
// deletes the key and returns once it is gone.
type rueidisMutex struct {
	locker rueidislock.Locker
	name   string
	held   context.Context
	cancel context.CancelFunc
}

func (m *rueidisMutex) Lock(ctx context.Context) error {
	own, stop := context.WithCancel(context.Background())
	detach := context.AfterFunc(ctx, stop)
	held, cancel, err := m.locker.WithContext(own, m.name)
	if !detach() {
		// ctx ended, and with it the wait or the hold just taken.
		if err == nil {
			cancel()
		}
		stop()
		return ctx.Err()
	}
	if err != nil {
		stop()
		return err
	}
	m.held = held
	m.cancel = func() { cancel(); stop() }
	return nil
}

// Unlock releases the hold; it reports errNotHeld if there is none or if
// the library had already lost it (its context ended: key gone or taken).
func (m *rueidisMutex) Unlock(context.Context) error {
	if m.held == nil {
		return errNotHeld
	}
	lost := m.held.Err() != nil
	m.cancel()
	m.held, m.cancel = nil, nil
	if lost {
		return errNotHeld
	}
	return nil
}
