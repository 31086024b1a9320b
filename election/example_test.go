package election_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/election"
	"github.com/warden-go/warden/internal/exampleredis"
)

// A candidate campaigns, leads with a fencing token, and resigns; anyone
// can read who leads.
func Example() {
	ctx := context.Background()
	rdb, _, closeRedis, err := exampleredis.Connect(ctx)
	if err != nil {
		panic(err)
	}
	defer closeRedis()
	c, err := client.New(rdb)
	if err != nil {
		panic(err)
	}
	defer c.Close(ctx)
	defer rdb.Del(ctx, "redisson_lock_token:{example:scheduler}")

	e, err := election.New(c, "example:scheduler")
	if err != nil {
		panic(err)
	}
	if err := e.Campaign(ctx, "host-a:8080"); err != nil {
		panic(err)
	}
	leader, err := e.Leader(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("leader:", leader.Value, "leading:", e.IsLeader(), "token > 0:", e.Token() > 0)

	if err := e.Resign(ctx); err != nil {
		panic(err)
	}
	_, err = e.Leader(ctx)
	fmt.Println("after Resign:", errors.Is(err, election.ErrNoLeader))
	// Output:
	// leader: host-a:8080 leading: true token > 0: true
	// after Resign: true
}
