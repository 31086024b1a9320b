package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/warden-go/warden/client"
)

// unlockCmd force-unlocks a lock.
type unlockCmd struct {
	Force bool   `help:"Required: take the lock from its holder."`
	Yes   bool   `help:"Do not ask for confirmation."`
	Name  string `arg:"" help:"The lock's name."`
}

func (c *unlockCmd) Run(ctx context.Context, a *app) error {
	if !c.Force {
		return fail(exitUsage, "warden: unlock takes the lock from its holder: pass --force")
	}
	if err := validName(c.Name); err != nil {
		return err
	}
	if !c.Yes && !a.terminal {
		return fail(exitRefused, "warden: unlock %q: no terminal to confirm on: pass --yes", c.Name)
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
	if o.Kind != client.ObjectLock && o.Kind != client.ObjectFairLock && o.Kind != client.ObjectGroupLock &&
		o.Kind != client.ObjectReadWriteLock && o.Kind != client.ObjectFencedLock {
		return fail(exitNotLock, "warden: unlock %q: it is a %s, which has no holder to unlock", c.Name, o.Kind)
	}
	if len(o.Holders) == 0 {
		return fail(exitNotFound, "warden: unlock %q: nobody holds it", c.Name)
	}
	if !c.Yes {
		fmt.Fprintf(a.stderr, "Force-unlock %s %q held by %s? [y/N] ", o.Kind, c.Name, holdersText(o))
		line, _ := bufio.NewReader(a.stdin).ReadString('\n')
		if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
			return fail(exitRefused, "warden: unlock %q: not confirmed", c.Name)
		}
	}
	wc, err := client.New(rdb, client.WithoutRegistry())
	if err != nil {
		return fmt.Errorf("warden: unlock %q: %w", c.Name, err)
	}
	defer closeClient(ctx, wc)
	var done bool
	switch o.Kind {
	case client.ObjectFairLock:
		done, err = wc.FairLock(c.Name).ForceUnlock(ctx)
	case client.ObjectFencedLock:
		done, err = wc.FencedLock(c.Name).ForceUnlock(ctx)
	case client.ObjectGroupLock:
		// Every value a holder holds: the group's other values are free.
		values := make([]string, 0, len(o.Holders))
		for _, h := range o.Holders {
			values = append(values, h.Value)
		}
		done, err = wc.GroupLock(c.Name, values...).ForceUnlock(ctx)
	case client.ObjectReadWriteLock:
		rw := wc.ReadWriteLock(c.Name)
		side := rw.ReadLock()
		if o.Holders[0].Mode == "write" { // the writer sorts first
			side = rw.WriteLock()
		}
		done, err = side.ForceUnlock(ctx)
	default:
		done, err = wc.Lock(c.Name).ForceUnlock(ctx)
	}
	if err != nil {
		return fmt.Errorf("warden: unlock %q: %w", c.Name, err)
	}
	if !done {
		return fail(exitNotFound, "warden: unlock %q: it was no longer held", c.Name)
	}
	fmt.Fprintf(a.stdout, "unlocked %s %q (was held by %s)\n", o.Kind, c.Name, holdersText(o))
	return nil
}
