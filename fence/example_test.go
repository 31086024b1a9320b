package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/fence"
)

// exampleRedis returns a Redis for the examples, an in-process miniredis,
// and a function that closes it. Real code passes its own go-redis client
// (single node, Sentinel or Cluster).
func exampleRedis() (*redis.Client, func()) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	return rdb, func() { _ = rdb.Close(); m.Close() }
}

// A holder writes with its lock's token; after a holder with a newer
// token has written, the older one's late write is refused and changes
// nothing.
func ExampleRedis() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.New(rdb)
	if err != nil {
		panic(err)
	}
	defer func() { _ = c.Close(ctx) }()
	guard := fence.NewRedis(rdb)

	lock := c.FencedLock("report")
	first, err := lock.LockToken(ctx)
	if err != nil {
		panic(err)
	}
	// ... the first holder pauses past its lease here; say it lost the
	// lock, and the next holder took it:
	if _, err := lock.ForceUnlock(ctx); err != nil {
		panic(err)
	}
	next, err := c.FencedLock("report").LockToken(ctx)
	if err != nil {
		panic(err)
	}
	if err := guard.Set(ctx, next, "report:latest", "the next holder's report", 0); err != nil {
		panic(err)
	}

	// The first holder wakes up and writes.
	err = guard.Set(ctx, first, "report:latest", "the first holder's stale report", 0)
	fmt.Println(errors.Is(err, fence.ErrStaleToken))
	fmt.Println(err)
	fmt.Println(rdb.Get(ctx, "report:latest").Val())
	// Output:
	// true
	// warden: stale fencing token: resource "report:latest": token 1, highest seen 2
	// the next holder's report
}

// Eval runs a script of the caller's when the token is fresh: here a
// read that raises the guard, so that an older holder's write that comes
// later is refused.
func ExampleRedis_Eval() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	guard := fence.NewRedis(rdb)

	balance, err := guard.IncrBy(ctx, 4, "{acct:7}:balance", 100)
	if err != nil {
		panic(err)
	}
	fmt.Println("balance", balance)
	v, err := guard.Eval(ctx, 5, `return redis.call('GET', KEYS[1])`, []string{"{acct:7}:balance"})
	fmt.Println("read with token 5:", v, err)
	_, err = guard.IncrBy(ctx, 4, "{acct:7}:balance", -100)
	fmt.Println(err)
	// Output:
	// balance 100
	// read with token 5: 100 <nil>
	// warden: stale fencing token: resource "{acct:7}:balance": token 4, highest seen 5
}

// The guard key shares the resource key's Cluster slot: under the key's
// hash tag, or with the whole key as its tag.
func ExampleGuardKey() {
	for _, key := range []string{"balance", "{user:1}:balance", "a}b"} {
		fmt.Println(fence.GuardKey(key))
	}
	// Output:
	// warden:fence{balance} <nil>
	// warden:fence:{user:1}:balance <nil>
	//  warden: invalid argument: key: "a}b" has a '}' but no hash tag, so no guard key can share its Cluster slot; give the key a hash tag ({...})
}

// Do runs the work in a transaction that first raises the resource's
// fence row to the token. The database comes from the caller's program,
// which registers its driver (pgx's stdlib driver here, for PostgreSQL);
// fence/sqltest runs this with SQLite.
func ExampleSQL() {
	var db *sql.DB // sql.Open("pgx", "postgres://...") in the program
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	guard := fence.NewSQL(db, fence.Postgres)
	if err := guard.Migrate(ctx); err != nil { // once, at deploy time
		fmt.Println(err)
		return
	}
	var token int64 = 7 // the holder's token: FencedLock.LockToken, an election term
	err := guard.Do(ctx, token, "invoice:42", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE invoice SET status = 'sent' WHERE id = 42")
		return err
	})
	if errors.Is(err, fence.ErrStaleToken) {
		fmt.Println("a newer holder has taken over:", err)
	}
}
