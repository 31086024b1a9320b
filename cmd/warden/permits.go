package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/warden-go/warden/client"
)

// maxRelease bounds permits release's N (the family's counts are below
// 2^53).
const maxRelease = 1 << 53

// permitsCmd groups the commands on a semaphore's permits.
type permitsCmd struct {
	Release permitsReleaseCmd `cmd:"" help:"Give N permits back to a semaphore (those a process took and died holding)."`
}

// permitsReleaseCmd gives permits back to a semaphore.
type permitsReleaseCmd struct {
	Yes  bool   `help:"Do not ask for confirmation."`
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
	case client.ObjectSemaphore, client.ObjectSemaphoreOrLatch:
	case client.ObjectPermitSemaphore:
		return fail(exitNotLock, "warden: permits release %q: a permit-expirable semaphore gets its permits back as their leases end (inspect lists them); "+
			"permits release is for a semaphore", c.Name)
	default:
		return fail(exitNotLock, "warden: permits release %q: it is a %s, not a semaphore", c.Name, o.Kind)
	}
	if !c.Yes {
		fmt.Fprintf(a.stderr, "Give %d permit(s) back to %s %q (%d available now)? [y/N] ", c.N, o.Kind, c.Name, o.Permits)
		line, _ := bufio.NewReader(a.stdin).ReadString('\n')
		if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
			return fail(exitRefused, "warden: permits release %q: not confirmed", c.Name)
		}
	}
	wc, err := client.New(rdb, client.WithoutRegistry())
	if err != nil {
		return fmt.Errorf("warden: permits release %q: %w", c.Name, err)
	}
	defer wc.Close(context.Background())
	// Only to a semaphore still there: one deleted meanwhile is not made
	// again.
	done, err := wc.Semaphore(c.Name).ReleaseIfExists(ctx, c.N)
	if err != nil {
		return fmt.Errorf("warden: permits release %q: %w", c.Name, err)
	}
	if !done {
		return fail(exitNotFound, "warden: permits release %q: it no longer exists", c.Name)
	}
	after, err := client.Inspect(ctx, rdb, c.Name)
	if err != nil {
		fmt.Fprintf(a.stdout, "released %d permit(s) of %q (%d available before)\n", c.N, c.Name, o.Permits)
		return nil
	}
	fmt.Fprintf(a.stdout, "released %d permit(s) of %q: %d available, %d before\n", c.N, c.Name, after.Permits, o.Permits)
	return nil
}
