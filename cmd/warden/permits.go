package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/warden-go/warden/client"
)

// maxRelease bounds permits release's N (the family's counts are below
// 2^53).
const maxRelease = 1 << 53

// closeTimeout bounds the Close of the Client a writing command makes.
const closeTimeout = 5 * time.Second

// closeClient closes the Client a writing command made, within
// closeTimeout even when ctx has ended.
func closeClient(ctx context.Context, wc *client.Client) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	_ = wc.Close(cctx)
}

// permitsCmd groups the commands on a semaphore's permits.
type permitsCmd struct {
	Release permitsReleaseCmd `cmd:"" help:"Give N permits back to a semaphore (those a process took and died holding). Where warden recorded the semaphore's total (TrySetPermits, SetPermits), a release that would leave more available than that is refused unless --over; a semaphore set by Redisson has no total to check against."`
}

// permitsReleaseCmd gives permits back to a semaphore.
type permitsReleaseCmd struct {
	Yes bool `help:"Do not ask for confirmation."`
	// Semaphore confirms that a positive integer, which a count-down
	// latch's count also is, is a semaphore's permits.
	Semaphore bool `help:"Confirm that NAME is a semaphore: a positive integer may as well be a count-down latch's count, which a release would raise."`
	// Over allows a release past the semaphore's recorded total.
	Over bool   `help:"Release even if that leaves more permits available than the total the semaphore was set to."`
	Name string `arg:"" help:"The semaphore's name."`
	N    int64  `arg:"" help:"How many permits to give back."`
}

func (c *permitsReleaseCmd) Run(ctx context.Context, a *app) error {
	if err := validName(c.Name); err != nil {
		return err
	}
	if c.N < 1 || c.N > maxRelease {
		return fail(exitUsage, "warden: permits release: N %d: want 1 to 2^53", c.N)
	}
	if !c.Yes && !a.terminal {
		return fail(exitRefused, "warden: permits release %q: no terminal to confirm on: pass --yes", c.Name)
	}
	rdb, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	o, err := client.Inspect(ctx, rdb, c.Name)
	if err != nil {
		return err
	}
	switch o.Kind {
	case client.ObjectSemaphore:
	case client.ObjectSemaphoreOrLatch:
		if !c.Semaphore {
			return fail(exitNotLock, "warden: permits release %q: its value %d may be a semaphore's permits or a count-down latch's count, "+
				"which Redis cannot tell apart and a release would raise: pass --semaphore if it is a semaphore", c.Name, o.Permits)
		}
	case client.ObjectPermitSemaphore:
		return fail(exitNotLock, "warden: permits release %q: a permit-expirable semaphore gets its permits back as their leases end (inspect lists them); "+
			"permits release is for a semaphore", c.Name)
	default:
		return fail(exitNotLock, "warden: permits release %q: it is a %s, not a semaphore", c.Name, o.Kind)
	}
	if o.HasTotal && !c.Over && o.Permits+c.N > o.Total {
		return fail(exitRefused, "warden: permits release %q: %d available of a total of %d: releasing %d would leave %d available, "+
			"more than the total (pass --over to release anyway)", c.Name, o.Permits, o.Total, c.N, o.Permits+c.N)
	}
	if !c.Yes {
		if o.Kind == client.ObjectSemaphoreOrLatch {
			fmt.Fprintf(a.stderr, "%q may be a count-down latch (its count and a semaphore's permits look the same in Redis); "+
				"releasing raises a latch's count.\n", c.Name)
		}
		total := "its total unknown: not set by warden"
		if o.HasTotal {
			total = fmt.Sprintf("of a total of %d", o.Total)
		}
		fmt.Fprintf(a.stderr, "Give %d permit(s) back to %s %q (%d available now, %d after, %s)? [y/N] ",
			c.N, o.Kind, c.Name, o.Permits, o.Permits+c.N, total)
		line, _ := bufio.NewReader(a.stdin).ReadString('\n')
		if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
			return fail(exitRefused, "warden: permits release %q: not confirmed", c.Name)
		}
	}
	wc, err := client.New(rdb, client.WithoutRegistry())
	if err != nil {
		return fmt.Errorf("warden: permits release %q: %w", c.Name, err)
	}
	defer closeClient(ctx, wc)
	// Only to a semaphore still there: one deleted meanwhile is not made
	// again.
	after, done, err := wc.Semaphore(c.Name).ReleaseIfExistsAvailable(ctx, c.N)
	if err != nil {
		return fmt.Errorf("warden: permits release %q: %w", c.Name, err)
	}
	if !done {
		return fail(exitNotFound, "warden: permits release %q: it no longer exists", c.Name)
	}
	// Say what the release left, as its script saw it. The total was
	// checked against what inspect read: a release by another process in
	// between can still take the count past it.
	if o.HasTotal {
		fmt.Fprintf(a.stdout, "released %d permit(s) of %q: %d available after release, %d before, of a total of %d\n",
			c.N, c.Name, after, o.Permits, o.Total)
		return nil
	}
	fmt.Fprintf(a.stdout, "released %d permit(s) of %q: %d available after release, %d before (total unknown)\n", c.N, c.Name, after, o.Permits)
	return nil
}
