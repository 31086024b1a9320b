// Command stripedlock shows warden's striped lock: the stock of 1,000
// products guarded by 16 stripes instead of one lock. Orders for products
// on different stripes run in parallel; an order for several products
// takes all their stripes at once, in the canonical order, so two such
// orders never deadlock. It prints which stripe a product maps to (the
// same on every client: FNV-1a 32 of the key mod 16) and that no stripe
// ever had two holders.
//
//	go run ./examples/stripedlock
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

const (
	stripes = 16
	workers = 8
	orders  = 20 // per worker
)

func main() { exampleredis.Main(run) }

func run() error { return exampleredis.Run(30*time.Second, demo) }

func demo(ctx context.Context, c *client.Client, _ redis.UniversalClient) error {
	stock := c.StripedLock("stock", stripes)
	for _, p := range []string{"product:1", "product:2", "product:42"} {
		fmt.Printf("%s is guarded by %s\n", p, stock.Name(p))
	}

	// One order for one product: the product's stripe.
	l := stock.For("product:42")
	if err := l.Lock(ctx); err != nil {
		return err
	}
	fmt.Printf("order for product:42 holds %s\n", l.Name())
	if err := l.Unlock(ctx); err != nil {
		return err
	}

	// Workers place orders of one to three products: each takes the
	// stripes of its products at once, and counts the holders of each.
	var holders [stripes]atomic.Int32
	var twice atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range orders {
				var keys []string
				for j := range 1 + (w+i)%3 {
					keys = append(keys, fmt.Sprintf("product:%d", (w*131+i*17+j*7)%1000))
				}
				order := stock.ForKeys(keys...)
				if err := order.Lock(ctx); err != nil {
					errs <- err
					return
				}
				taken := map[int]bool{}
				for _, k := range keys {
					if n := stock.Stripe(k); !taken[n] {
						taken[n] = true
						if holders[n].Add(1) != 1 {
							twice.Add(1)
						}
					}
				}
				time.Sleep(time.Millisecond) // update the stock
				for n := range taken {
					holders[n].Add(-1)
				}
				if err := order.Unlock(ctx); err != nil {
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
		return fmt.Errorf("a stripe had two holders %d times", n)
	}
	fmt.Printf("done: %d orders by %d workers over %d stripes, never two holders of a stripe\n", workers*orders, workers, stripes)
	return c.Close(ctx)
}
