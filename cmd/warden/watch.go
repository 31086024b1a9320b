package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
)

// watchCmd refreshes a view of the held locks.
type watchCmd struct {
	Glob     string        `arg:"" optional:"" default:"*" help:"Names to watch (Redis glob)."`
	Interval time.Duration `help:"Time between refreshes." default:"1s"`
	Count    int           `help:"Stop after this many refreshes (0: until interrupted)." default:"0"`
}

// holding is one holder of one name, for its age.
type holding struct{ name, owner string }

// watcher remembers when it first saw each holding.
type watcher struct {
	since map[holding]time.Time
	// first is when the first refresh read: a holding first seen then
	// was already there when the watch began, its age unknown.
	first  time.Time
	frames int
}

func (c *watchCmd) Run(ctx context.Context, a *app) error {
	if err := client.ValidateGlob(c.Glob); err != nil {
		return err
	}
	if c.Interval <= 0 {
		return fail(exitUsage, "warden: --interval must be positive")
	}
	if c.Count < 0 {
		return fail(exitUsage, "warden: --count must not be negative")
	}
	rdb, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	w := &watcher{since: map[holding]time.Time{}}
	tick := time.NewTicker(c.Interval)
	defer tick.Stop()
	for {
		err := w.frame(ctx, a, rdb, c)
		if ctx.Err() != nil {
			return nil // interrupted
		}
		if c.Count > 0 && w.frames >= c.Count {
			return err // the frame showed it; stderr gets its line too
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// frame reads the held locks once and prints them.
func (w *watcher) frame(ctx context.Context, a *app, rdb redis.UniversalClient, c *watchCmd) error {
	var objs []client.Object
	var first error
	var refused refusals
	for o, err := range client.Scan(ctx, rdb, c.Glob) {
		if err != nil {
			if refused.note(err) {
				continue
			}
			if first == nil {
				first = err
			}
			continue
		}
		if len(o.Holders) > 0 || len(o.Waiters) > 0 {
			objs = append(objs, o)
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if first == nil {
		first = refused.err(c.Glob)
	}
	now := time.Now()
	if w.frames == 0 {
		w.first = now
	}
	slices.SortFunc(objs, func(x, y client.Object) int { return strings.Compare(x.Name, y.Name) })
	seen := map[holding]bool{}
	for _, o := range objs {
		for _, h := range o.Holders {
			k := holding{o.Name, h.Owner}
			seen[k] = true
			if _, ok := w.since[k]; !ok {
				w.since[k] = now
			}
		}
	}
	for k := range w.since {
		if !seen[k] {
			delete(w.since, k)
		}
	}
	w.frames++

	if a.stdoutTerminal {
		fmt.Fprint(a.stdout, "\x1b[H\x1b[2J")
	} else if w.frames > 1 {
		fmt.Fprintln(a.stdout)
	}
	waiting := 0
	for _, o := range objs {
		waiting += len(o.Waiters)
	}
	fmt.Fprintf(a.stdout, "warden watch %s  every %s  %s  %d held, %d waiting\n", c.Glob, c.Interval,
		now.UTC().Format(time.RFC3339), len(objs), waiting)
	if first != nil {
		fmt.Fprintln(a.stdout, oneLine(first))
	}
	tw := newTabTable(a.stdout)
	fmt.Fprintln(tw, "NAME\tKIND\tHOLDER\tHELD\tTTL\tWAITERS\t")
	for _, o := range objs {
		if len(o.Holders) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t%s\t%d\t\n", shown(o.Name), o.Kind, ttlText(o.TTL), len(o.Waiters))
		}
		for i, h := range o.Holders {
			k := holding{o.Name, h.Owner}
			held := age(now.Sub(w.since[k]))
			if w.since[k].Equal(w.first) {
				held = ">" + held
			}
			name, kind, ttl, waiters := shown(o.Name), string(o.Kind), ttlText(o.TTL), fmt.Sprint(len(o.Waiters))
			if i > 0 {
				name, kind, ttl, waiters = "", "", "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", name, kind, holderText(h), held, ttl, waiters)
		}
	}
	_ = tw.Flush()
	return first
}
