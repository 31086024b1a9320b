package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/warden-go/warden/client"
)

// unregisteredHeading heads the holders whose client has no registry
// entry. A warden Client keeps its entry while it runs, and after it died
// or closed holding a lock for its registry retention; so such a holder is
// a Redisson client, a Client with the registry off (WithoutRegistry), a
// Client gone for longer than its retention, or one whose entry was lost
// (deleted, evicted, or a restart or failover that lost it).
const unregisteredHeading = "holders whose client is not registered (Redisson, registry off, " +
	"gone for longer than its registry retention, or its entry lost in a restart, failover or eviction):"

// clientsCmd lists the client registry and the holders without an entry.
type clientsCmd struct {
	Glob string `arg:"" optional:"" default:"*" help:"The names whose holders to check for a registry entry (Redis glob)."`
	JSON bool   `name:"json" help:"Print {\"clients\": [...], \"unregistered\": [...]} as JSON."`
}

func (c *clientsCmd) Run(ctx context.Context, a *app) error {
	if err := client.ValidateGlob(c.Glob); err != nil {
		return err
	}
	rdb, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	var recs []client.ClientRecord
	for r, err := range client.Clients(ctx, rdb) {
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(x, y client.ClientRecord) int {
		return cmp.Or(strings.Compare(x.Service, y.Service), strings.Compare(x.Host, y.Host), strings.Compare(x.ID, y.ID))
	})
	// The holders whose client has no entry, by client ID.
	unreg := map[string][]string{}
	first, err := scan(ctx, a, rdb, c.Glob, func(o client.Object) error {
		for _, h := range o.Holders {
			if h.Client == nil && !slices.Contains(unreg[h.ClientID], o.Name) {
				unreg[h.ClientID] = append(unreg[h.ClientID], o.Name)
			}
		}
		return nil
	}, func() {})
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(unreg))
	for id := range unreg {
		ids = append(ids, id)
		slices.Sort(unreg[id])
	}
	slices.Sort(ids)

	if c.JSON {
		out := struct {
			Clients      []jsonClient       `json:"clients"`
			Unregistered []jsonUnregistered `json:"unregistered"`
		}{Clients: []jsonClient{}, Unregistered: []jsonUnregistered{}}
		for _, r := range recs {
			jc := jsonClient{ID: r.ID, Service: r.Service, Host: r.Host, PID: r.PID,
				Version: r.Version, StartedMs: r.Started.UnixMilli(), SeenMs: r.Seen.UnixMilli(), Alive: r.Alive()}
			if !r.Closed.IsZero() {
				closed := r.Closed.UnixMilli()
				jc.ClosedMs = &closed
			}
			out.Clients = append(out.Clients, jc)
		}
		for _, id := range ids {
			out.Unregistered = append(out.Unregistered, jsonUnregistered{ClientID: id, Names: unreg[id]})
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s\n", b)
	} else {
		tw := newTabTable(a.stdout)
		fmt.Fprintln(tw, "CLIENT\tSERVICE\tHOST\tPID\tVERSION\tUP\tSEEN\t")
		for _, r := range recs {
			seen := age(r.Idle) + " ago"
			if !r.Alive() {
				seen = goneText(r)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", shown(r.ID), shown(r.Service), shown(r.Host), r.PID, shown(r.Version),
				upText(r), seen)
		}
		_ = tw.Flush()
		if len(ids) > 0 {
			fmt.Fprintln(a.stdout, "\n"+unregisteredHeading)
			tw = newTabTable(a.stdout)
			fmt.Fprintln(tw, "  CLIENT\tHOLDS\t")
			for _, id := range ids {
				names := make([]string, len(unreg[id]))
				for i, n := range unreg[id] {
					names[i] = shown(n)
				}
				fmt.Fprintf(tw, "  %s\t%s\t\n", shown(id), strings.Join(names, ", "))
			}
			_ = tw.Flush()
		}
	}
	return printedErr(first)
}
