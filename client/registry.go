package client

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/actors"
	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// modulePath is warden's module, whose version the registry records.
const modulePath = "github.com/warden-go/warden"

// maxService bounds a service name.
const maxService = 256

// WithService sets the service name the Client records in the client
// registry, where operators see who holds a lock: 1 to 256 bytes of UTF-8
// without spaces or control characters. The default is the executable's
// base name.
func WithService(name string) Option {
	return func(o *options) error {
		if err := validateService(name); err != nil {
			return err
		}
		o.service = name
		return nil
	}
}

// WithoutRegistry keeps the Client out of the client registry: it writes
// no warden_client:{<clientID>} record, and operators see its holdings by
// client ID only. The default is to keep a record (see New).
func WithoutRegistry() Option {
	return func(o *options) error {
		o.noRegistry = true
		return nil
	}
}

// DefaultRegistryRetention is how long a Client's registry record
// outlives its last refresh unless WithRegistryRetention says otherwise:
// long enough that the holder of any lease up to a day stays named after
// its process died, or closed without releasing it.
const DefaultRegistryRetention = 24 * time.Hour

// WithRegistryRetention sets how long the Client's registry record outlives
// its last refresh, so that a process killed while it holds a lock (a fixed
// lease that outlives it) stays named by service, host and PID; Clients and
// Inspect tell such a record from a live one by its refresh time, on the
// Redis server's clock (ClientRecord.Alive). Give at least the longest
// lease the Client takes; a lease longer than the retention outlives its
// holder's name. d is a whole number of milliseconds from 1ms to 30 days;
// a retention below three renewal periods is three periods. Close keeps
// the record for the retention, marked closed, when the Client's handles
// still held locks, and deletes it otherwise, as CloseAndRelease does once
// its releases succeed. A plain Semaphore's permits carry no holder, so
// no record names whoever took them. The default is
// DefaultRegistryRetention (24 hours).
func WithRegistryRetention(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Millisecond || d > maxRegistryRetention || d%time.Millisecond != 0 {
			return invalid("registry retention", "%v: want a whole number of ms from 1ms to %v", d, maxRegistryRetention)
		}
		o.registryRetention = d
		return nil
	}
}

// maxRegistryRetention bounds WithRegistryRetention.
const maxRegistryRetention = 30 * 24 * time.Hour

// validateService checks a service name.
func validateService(name string) error {
	if name == "" || len(name) > maxService {
		return invalid("service", "want 1 to %d bytes, got %d", maxService, len(name))
	}
	if !utf8.ValidString(name) {
		return invalid("service", "%q is not UTF-8", name)
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return invalid("service", "%q has a space or control character at byte %d", name, i)
	}
	return nil
}

// defaultService is the executable's base name made a valid service name:
// spaces and control characters become "_"; "warden" when there is none.
func defaultService() string {
	exe, err := os.Executable()
	if err != nil || exe == "" {
		exe = os.Args[0]
	}
	name := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError {
			return '_'
		}
		return r
	}, filepath.Base(exe))
	if len(name) > maxService {
		name = name[:maxService]
	}
	if validateService(name) != nil || name == "." || name == string(filepath.Separator) {
		return "warden"
	}
	return name
}

// moduleVersion is warden's version as the build recorded it: the
// module's version when warden is a dependency, the main module's when
// warden is built itself ("(devel)" for a work tree), "unknown" without
// build information.
func moduleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if info.Main.Path == modulePath {
		return info.Main.Version
	}
	for _, d := range info.Deps {
		if d.Path == modulePath {
			if d.Replace != nil && d.Replace.Version != "" {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}

// registry is the Client's record in the client registry, nil when
// WithoutRegistry turned it off.
func registry(rdb redis.UniversalClient, id string, o options, started time.Time) *actors.Registry {
	if o.noRegistry {
		return nil
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	service := o.service
	if service == "" {
		service = defaultService()
	}
	retention := o.registryRetention
	if retention == 0 {
		retention = DefaultRegistryRetention
	}
	// The TTL every write gives the record (the engine's rule: at least
	// three refresh periods), recorded so that a reader can tell, on the
	// server's clock alone, how long ago the record was written.
	retention = max(retention, 3*actors.RegistryPeriod(o.watchdog))
	return &actors.Registry{
		Key:       redisio.ClientRegistryKey(id),
		Redis:     rdb,
		Retention: retention,
		Fields: []string{
			redisio.RegistryService, service,
			redisio.RegistryHost, host,
			redisio.RegistryPID, strconv.Itoa(os.Getpid()),
			redisio.RegistryVersion, moduleVersion(),
			redisio.RegistryStarted, redisio.UnixMillis(started),
			redisio.RegistryTTL, strconv.FormatInt(retention.Milliseconds(), 10),
		},
	}
}

// registryContext is the context of Close's last registry write: the I/O
// bound, or one short try when the caller stopped waiting.
func registryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	bound := redisio.IOTimeout
	if ctx.Err() != nil {
		bound = 100 * time.Millisecond
	}
	return context.WithTimeout(context.WithoutCancel(ctx), bound)
}

// unregister ends the Client's registry record once the engine that
// refreshed it has stopped. With held (Close left locks in Redis that
// outlive the Client) the record is written one last time, marked closed,
// and expires by its retention, so that those locks' holder stays named;
// otherwise it is deleted. A failure is logged (the record expires by
// itself).
func (c *Client) unregister(ctx context.Context, held []holdingKey) {
	if c.registry == nil {
		return
	}
	dctx, cancel := registryContext(ctx)
	defer cancel()
	// Only its own record: another Client given the same ID (a mistake the
	// registry actor warns of) keeps its record.
	if len(held) > 0 {
		now := c.opts.clock.Now()
		period := actors.RegistryPeriod(c.opts.watchdog)
		fields := append(slices.Clip(c.registry.Fields),
			redisio.RegistrySeen, redisio.UnixMillis(now),
			redisio.RegistryBeat, strconv.FormatInt(period.Milliseconds(), 10),
			redisio.RegistryClosed, redisio.UnixMillis(now))
		if _, err := redisio.CloseClientRecord(dctx, c.rdb, c.registry.Key, fields, c.closedRecordTTL(dctx, held, period)); err != nil {
			c.opts.logger.Warn("warden: could not mark the client registry record closed; it expires by itself",
				"key", c.registry.Key, "err", err)
		}
		return
	}
	if _, err := redisio.UnregisterClient(dctx, c.rdb, c.registry.Key, c.registry.Fields); err != nil {
		c.opts.logger.Warn("warden: could not delete the client registry record; it expires by itself",
			"key", c.registry.Key, "err", err)
	}
}

// closedRecordTTL is how long the record of a Client closed while it held
// the locks in held stays: as long as the longest of them may still live
// in Redis (its key's PTTL) plus three refresh periods, never longer than
// the registry retention. A lock whose key cannot be read, has no TTL, or
// is of a kind whose holds are not all in the name's own key counts as
// living the whole retention.
func (c *Client) closedRecordTTL(ctx context.Context, held []holdingKey, period time.Duration) time.Duration {
	retention := c.registry.Retention
	var longest time.Duration
	for _, k := range held {
		if k.kind == messages.KindGroupLock || k.kind == messages.KindSemaphore ||
			k.kind == messages.KindPermitSemaphore || k.kind == messages.KindCountDownLatch {
			return retention
		}
		ttl, err := c.rdb.PTTL(ctx, k.name).Result()
		switch {
		case err != nil || ttl == -1:
			return retention // unknown, or no TTL: the whole retention
		case ttl > longest:
			longest = ttl // -2 (gone) counts as nothing left
		}
	}
	return min(retention, longest+3*period)
}
