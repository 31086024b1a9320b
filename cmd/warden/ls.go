package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/warden-go/warden/client"
)

// lsCmd lists the objects whose name matches a glob.
type lsCmd struct {
	Glob string `arg:"" optional:"" default:"*" help:"Names to list (Redis glob: *, ?, [...], \\ escapes)."`
	JSON bool   `name:"json" help:"Print one JSON array of objects."`
}

// lsFlush is how many table rows ls prints before it flushes them: rows
// come as the scan reads them, aligned in blocks of this many.
const lsFlush = 500

func (l *lsCmd) Run(ctx context.Context, a *app) error {
	if err := client.ValidateGlob(l.Glob); err != nil {
		return err
	}
	rdb, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	tw := &table{w: a.stdout}
	n := 0
	if l.JSON {
		fmt.Fprint(a.stdout, "[")
	} else {
		tw.row("NAME", "KIND", "TTL", "HOLDERS", "WAITERS", "VALUE")
	}
	first, err := scan(ctx, a, rdb, l.Glob, func(o client.Object) error {
		if l.JSON {
			b, err := json.Marshal(toJSON(o, time.Now()))
			if err != nil {
				return err
			}
			if n > 0 {
				fmt.Fprint(a.stdout, ",")
			}
			fmt.Fprintf(a.stdout, "\n%s", b)
		} else {
			tw.row(shown(o.Name), string(o.Kind), ttlText(o.TTL), holdersText(o), strconv.Itoa(len(o.Waiters)), detailText(o))
			if (n+1)%lsFlush == 0 {
				tw.flush()
			}
		}
		n++
		return nil
	}, func() {
		if l.JSON {
			fmt.Fprintln(a.stdout, "\n]")
		} else {
			tw.flush()
		}
	})
	if err != nil {
		return err
	}
	return printedErr(first)
}
