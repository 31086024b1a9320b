package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/warden-go/warden/client"
)

// jsonObject is an object as ls --json and inspect --json print it.
type jsonObject struct {
	Name    string       `json:"name"`
	Kind    string       `json:"kind"`
	TTLMs   int64        `json:"ttl_ms"`
	Holders []jsonHolder `json:"holders"`
	Waiters []jsonWaiter `json:"waiters"`
	Permits *int64       `json:"permits,omitempty"`
	Count   *int64       `json:"count,omitempty"`
	Token   *int64       `json:"token,omitempty"`
	Leases  []jsonLease  `json:"leases,omitempty"`
	// Total is a permit-expirable semaphore's permits, available and
	// held (Redisson's getPermits), or a semaphore's total as warden
	// recorded it (absent when unknown: set by Redisson).
	Total *int64 `json:"total,omitempty"`
}

type jsonHolder struct {
	Owner    string `json:"owner"`
	ClientID string `json:"client_id"`
	Count    int    `json:"count"`
	Mode     string `json:"mode"`
	// Value is the value a group lock's holder holds.
	Value string `json:"value,omitempty"`
	// Registered: the holder's client has a registry entry (service, host
	// and pid come from it).
	Registered bool   `json:"registered"`
	Service    string `json:"service"`
	Host       string `json:"host"`
	PID        int    `json:"pid"`
	// Alive: the registered client still refreshes its entry (absent
	// when it has none).
	Alive *bool `json:"alive,omitempty"`
}

type jsonWaiter struct {
	Owner      string `json:"owner"`
	ClientID   string `json:"client_id"`
	DeadlineMs int64  `json:"deadline_ms"`
}

type jsonLease struct {
	ID        string `json:"id"`
	ExpiresMs int64  `json:"expires_ms"`
}

// jsonClient is a registry entry as clients --json prints it.
type jsonClient struct {
	ID        string `json:"id"`
	Service   string `json:"service"`
	Host      string `json:"host"`
	PID       int    `json:"pid"`
	Version   string `json:"version"`
	StartedMs int64  `json:"started_ms"`
	SeenMs    int64  `json:"seen_ms"`
	// Alive: the client still refreshes its entry; false for one whose
	// process is gone (its entry is kept for the registry retention).
	Alive bool `json:"alive"`
	// ClosedMs is when the client closed without releasing its locks
	// (absent when it has not).
	ClosedMs *int64 `json:"closed_ms,omitempty"`
}

// jsonUnregistered is a client ID that holds locks without a registry
// entry.
type jsonUnregistered struct {
	ClientID string   `json:"client_id"`
	Names    []string `json:"names"`
}

// toJSON renders o for --json.
func toJSON(o client.Object, now time.Time) jsonObject {
	j := jsonObject{Name: o.Name, Kind: string(o.Kind), TTLMs: ms(o.TTL), Holders: []jsonHolder{}, Waiters: []jsonWaiter{}}
	for _, h := range o.Holders {
		jh := jsonHolder{Owner: h.Owner, ClientID: h.ClientID, Count: h.Count, Mode: h.Mode, Value: h.Value}
		if h.Client != nil {
			jh.Registered, jh.Service, jh.Host, jh.PID = true, h.Client.Service, h.Client.Host, h.Client.PID
			alive := h.Client.Alive()
			jh.Alive = &alive
		}
		j.Holders = append(j.Holders, jh)
	}
	for _, w := range o.Waiters {
		j.Waiters = append(j.Waiters, jsonWaiter{Owner: w.Owner, ClientID: w.ClientID, DeadlineMs: w.Deadline.UnixMilli()})
	}
	switch o.Kind {
	case client.ObjectSemaphore, client.ObjectPermitSemaphore:
		j.Permits = &o.Permits
		if o.HasTotal {
			j.Total = &o.Total
		}
	case client.ObjectCountDownLatch:
		j.Count = &o.Count
	case client.ObjectSemaphoreOrLatch:
		j.Permits, j.Count = &o.Permits, &o.Count
	case client.ObjectFencedLock:
		j.Token = &o.Token
	}
	for _, l := range o.Leases {
		e := int64(-1)
		if !l.Expiry.IsZero() {
			e = l.Expiry.UnixMilli()
		}
		j.Leases = append(j.Leases, jsonLease{ID: l.ID, ExpiresMs: e})
	}
	if o.Kind == client.ObjectPermitSemaphore {
		if j.Leases == nil {
			j.Leases = []jsonLease{}
		}
		total := o.Permits + int64(len(o.Leases))
		j.Total = &total
	}
	return j
}

// ms is a TTL in milliseconds, -1 for none.
func ms(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// ttlText renders a TTL for a table: "-" for none.
func ttlText(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return age(d)
}

// age renders a duration to a tenth of a second below a minute, to the
// second above.
func age(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// shown is s as a table shows it: as it is, or Go-quoted when it holds a
// control character (a tab or newline would break the table's rows, an
// escape sequence would act on the terminal) or is not UTF-8. Names,
// owners and registry fields are any bytes a writer chose.
func shown(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// who names a holder's client: service@host:pid from the registry,
// followed by "(gone)" when its process no longer refreshes the entry or
// "(closed)" when it closed without releasing, or its client ID when it
// has no entry.
func who(clientID string, rec *client.ClientRecord) string {
	if rec == nil {
		return shown(clientID)
	}
	s := fmt.Sprintf("%s@%s:%d", shown(rec.Service), shown(rec.Host), rec.PID)
	switch {
	case !rec.Closed.IsZero():
		s += " (closed)"
	case !rec.Alive():
		s += " (gone)"
	}
	return s
}

// goneText says since when a client that is not alive has been gone or
// closed: its last write of the entry, and how long ago that was on the
// server's clock.
func goneText(rec client.ClientRecord) string {
	state, since := "gone", rec.Seen
	if !rec.Closed.IsZero() {
		state, since = "closed", rec.Closed
	}
	return fmt.Sprintf("%s since %s (%s ago)", state, since.UTC().Format("2006-01-02T15:04:05.0Z"), age(rec.Idle))
}

// upText is how long a client has been running: up to its last refresh
// and the time since, for a live one (neither on this host's clock); up
// to its last refresh for one that is gone ("-" when the entry has no
// times).
func upText(rec client.ClientRecord) string {
	if rec.Started.IsZero() || rec.Seen.IsZero() {
		return "-"
	}
	up := rec.Seen.Sub(rec.Started)
	if rec.Alive() {
		up += rec.Idle
	}
	return age(max(up, 0))
}

// holderText renders a holder for a table: who, its mode, its count.
func holderText(h client.Holder) string {
	s := who(h.ClientID, h.Client)
	if h.Value != "" {
		s = shown(h.Value) + ": " + s
	}
	if h.Mode != "" {
		s += " (" + h.Mode + ")"
	}
	if h.Count > 1 {
		s += " x" + strconv.Itoa(h.Count)
	}
	return s
}

// holdersText renders every holder, "-" for none.
func holdersText(o client.Object) string {
	if len(o.Holders) == 0 {
		return "-"
	}
	parts := make([]string, len(o.Holders))
	for i, h := range o.Holders {
		parts[i] = holderText(h)
	}
	return strings.Join(parts, ", ")
}

// detailText is what a table shows beyond holders: permits, count, token,
// leases.
func detailText(o client.Object) string {
	switch o.Kind {
	case client.ObjectSemaphore:
		if o.HasTotal {
			// Available of the total warden recorded.
			return fmt.Sprintf("permits=%d total=%d", o.Permits, o.Total)
		}
		return "permits=" + strconv.FormatInt(o.Permits, 10)
	case client.ObjectPermitSemaphore:
		// Its total is what is available and what is held, as Redisson
		// counts it (getPermits); a dead holder's permits come back as
		// their leases end.
		return fmt.Sprintf("permits=%d leases=%d total=%d", o.Permits, len(o.Leases), o.Permits+int64(len(o.Leases)))
	case client.ObjectCountDownLatch:
		return "count=" + strconv.FormatInt(o.Count, 10)
	case client.ObjectSemaphoreOrLatch:
		return "value=" + strconv.FormatInt(o.Count, 10)
	case client.ObjectFencedLock:
		return "token=" + strconv.FormatInt(o.Token, 10)
	}
	return ""
}
