// Command grouplock shows warden's group lock (Redisson's faster
// multi-lock): a school books rooms for classes, each booking taking all
// the rooms it needs of the building at once, or none. Bookings that share
// a room wait for each other; bookings of other rooms go on at the same
// time. However many rooms a booking takes, it is one script on one Redis
// hash: one round trip, one cluster slot.
//
//	go run ./examples/grouplock
//
// It uses the Redis server at REDIS_ADDR (host:port) when that is set, and
// otherwise an embedded in-process Redis (miniredis).
package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/exampleredis"
)

const building = "building:north"

func main() { exampleredis.Main(run) }

func run() error { return exampleredis.Run(30*time.Second, demo) }

func demo(ctx context.Context, c *client.Client, _ redis.UniversalClient) error {
	// One booking holds rooms 101 and 102; another asking for 102 and 103
	// gets nothing, one asking for 201 and 202 goes ahead.
	math := c.GroupLock(building, "room-101", "room-102")
	if err := math.Lock(ctx); err != nil {
		return err
	}
	fmt.Println("math holds room-101 and room-102")
	ok, err := c.GroupLock(building, "room-102", "room-103").TryLock(ctx)
	if err != nil {
		return err
	}
	fmt.Println("physics gets room-102 and room-103:", ok)
	art := c.GroupLock(building, "room-201", "room-202")
	if ok, err = art.TryLock(ctx); err != nil {
		return err
	}
	fmt.Println("art gets room-201 and room-202:", ok)
	if err := errors.Join(art.Unlock(ctx), math.Unlock(ctx)); err != nil {
		return err
	}

	// Bookings of overlapping rooms, each waiting for all of its rooms at
	// once: no room ever has two bookings.
	rooms := []string{"room-101", "room-102", "room-103", "room-104"}
	var inUse [4]atomic.Int32
	var twice atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, len(rooms))
	for i := range rooms {
		wanted := []int{i, (i + 1) % len(rooms)}
		booking := c.GroupLock(building, rooms[wanted[0]], rooms[wanted[1]])
		wg.Go(func() {
			for range 10 {
				if err := booking.Lock(ctx); err != nil {
					errs <- err
					return
				}
				for _, r := range wanted {
					if inUse[r].Add(1) != 1 {
						twice.Add(1)
					}
				}
				time.Sleep(2 * time.Millisecond) // the class
				for _, r := range wanted {
					inUse[r].Add(-1)
				}
				if err := booking.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	var failed []error
	for err := range errs {
		failed = append(failed, err)
	}
	if err := errors.Join(failed...); err != nil {
		return err
	}
	if n := twice.Load(); n > 0 {
		return fmt.Errorf("a room was booked twice at once %d times", n)
	}
	fmt.Println("done: 40 bookings of two rooms each, never two bookings of one room at once")
	return c.Close(ctx)
}
