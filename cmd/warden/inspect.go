package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/messages"
)

// inspectCmd shows one object in full.
type inspectCmd struct {
	Name string `arg:"" help:"The object's name."`
	JSON bool   `name:"json" help:"Print the object as JSON."`
}

func (c *inspectCmd) Run(ctx context.Context, a *app) error {
	if err := validName(c.Name); err != nil {
		return err
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
	if c.JSON {
		b, err := json.MarshalIndent(toJSON(o, time.Now()), "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s\n", b)
		return nil
	}
	printObject(a, o, time.Now())
	return nil
}

// validName checks a NAME argument as client.Inspect does, before any
// connection.
func validName(name string) error {
	return messages.ValidateName(name)
}

// printObject prints o as inspect does without --json.
func printObject(a *app, o client.Object, now time.Time) {
	tw := newTabTable(a.stdout)
	fmt.Fprintf(tw, "name:\t%s\n", shown(o.Name))
	fmt.Fprintf(tw, "kind:\t%s\n", o.Kind)
	fmt.Fprintf(tw, "ttl:\t%s\n", ttlText(o.TTL))
	if o.Kind == client.ObjectSemaphoreOrLatch {
		// Not "value: value=3": say what the integer may be.
		fmt.Fprintf(tw, "value:\t%d (a semaphore's available permits or a count-down latch's count)\n", o.Count)
	} else if d := detailText(o); d != "" {
		fmt.Fprintf(tw, "value:\t%s\n", d)
	}
	switch {
	case o.Kind == client.ObjectSemaphore && o.HasTotal:
		fmt.Fprintf(tw, "total:\t%d (%d of %d available)\n", o.Total, o.Permits, o.Total)
	case o.Kind == client.ObjectSemaphore, o.Kind == client.ObjectSemaphoreOrLatch:
		fmt.Fprintf(tw, "total:\tunknown (not set by warden's TrySetPermits or SetPermits)\n")
	}
	_ = tw.Flush()
	if len(o.Holders) > 0 {
		fmt.Fprintln(a.stdout, "\nholders:")
		tw = newTabTable(a.stdout)
		// A group lock has a holder per value held: the value leads its
		// row.
		group := o.Kind == client.ObjectGroupLock
		if group {
			fmt.Fprint(tw, "  VALUE\t")
		} else {
			fmt.Fprint(tw, "  ")
		}
		fmt.Fprint(tw, "OWNER\tCOUNT\tMODE\tCLIENT\tSERVICE\tHOST\tPID\t")
		for _, h := range o.Holders {
			if h.Client != nil && !h.Client.Alive() {
				fmt.Fprint(tw, "STATE\t") // a holder's process is gone
				break
			}
		}
		fmt.Fprintln(tw)
		for _, h := range o.Holders {
			mode := h.Mode
			if mode == "" {
				mode = "-"
			}
			if group {
				fmt.Fprintf(tw, "  %s\t", shown(h.Value))
			} else {
				fmt.Fprint(tw, "  ")
			}
			if h.Client == nil {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", shown(h.Owner), h.Count, mode, shown(h.ClientID), "(unregistered)", "-", "-")
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t", shown(h.Owner), h.Count, mode, shown(h.ClientID), shown(h.Client.Service), shown(h.Client.Host), h.Client.PID)
			if !h.Client.Alive() {
				// The process is gone; its entry stays for the retention.
				fmt.Fprintf(tw, "%s\t", goneText(*h.Client))
			}
			fmt.Fprintln(tw)
		}
		_ = tw.Flush()
	}
	if len(o.Waiters) > 0 {
		fmt.Fprintln(a.stdout, "\nwaiters (head first):")
		tw = newTabTable(a.stdout)
		fmt.Fprintln(tw, "  #\tOWNER\tCLIENT\tDEADLINE\t")
		for i, w := range o.Waiters {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s (in %s)\t\n", i+1, shown(w.Owner), shown(w.ClientID), w.Deadline.UTC().Format(time.RFC3339), age(w.Deadline.Sub(now)))
		}
		_ = tw.Flush()
	}
	if len(o.Leases) > 0 {
		fmt.Fprintln(a.stdout, "\nleases:")
		tw = newTabTable(a.stdout)
		fmt.Fprintln(tw, "  PERMIT\tEXPIRES\t")
		for _, l := range o.Leases {
			exp := "never"
			if !l.Expiry.IsZero() {
				exp = fmt.Sprintf("%s (in %s)", l.Expiry.UTC().Format(time.RFC3339), age(l.Expiry.Sub(now)))
			}
			fmt.Fprintf(tw, "  %s\t%s\t\n", shown(l.ID), exp)
		}
		_ = tw.Flush()
	}
}
