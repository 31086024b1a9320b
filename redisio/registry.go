package redisio

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Fields of a client's registry record.
const (
	RegistryService = "service" // the service name (client.WithService)
	RegistryHost    = "host"    // the host name
	RegistryPID     = "pid"     // the process ID
	RegistryVersion = "version" // warden's module version
	RegistryStarted = "started" // when the client started, Unix milliseconds
	RegistrySeen    = "seen"    // the last refresh, Unix milliseconds
	// RegistryBeat is the refresh period in milliseconds: a record whose
	// seen is more than two periods old belongs to a Client that stopped
	// (see RecordAlive). A record without it (an older warden's) lives
	// three periods after its last refresh, so it is alive while it exists.
	RegistryBeat = "beat"
	// RegistryTTL is the TTL in milliseconds that every write gives the
	// record: against the record's remaining TTL it says how long ago it
	// was last written, by the Redis server's clock alone.
	RegistryTTL = "ttl"
	// RegistryClosed is when the Client closed, Unix milliseconds: Close
	// without release writes it once, last, when the Client still held
	// locks that outlive it, and the record then expires by its TTL.
	RegistryClosed = "closed"
)

// RecordAlive reports whether a record with the fields seen and beat (as
// stored: Unix milliseconds, milliseconds) still belongs to a running
// Client at now: it was refreshed within two refresh periods (one missed
// refresh is forgiven). A record without a beat is alive; one whose seen
// does not parse is not.
func RecordAlive(seen, beat string, now time.Time) bool {
	b, err := strconv.ParseInt(beat, 10, 64)
	if err != nil || b <= 0 {
		return true
	}
	s, err := strconv.ParseInt(seen, 10, 64)
	if err != nil {
		return false
	}
	return now.UnixMilli()-s <= 2*b
}

// ClientRegistryKey is the key of a client's record in the client
// registry: warden_client:{<clientID>}, a HASH of the Registry* fields.
// The braces give every client's record a cluster slot of its own, apart
// from any lock's keys.
func ClientRegistryKey(clientID string) string {
	return clientRecordPrefix + "{" + clientID + "}"
}

// clientRecordPrefix starts every registry key.
const clientRecordPrefix = "warden_client:"

// ClientRecordID returns the client ID of registry key key (from
// ClientRegistryKey), and whether key is one.
func ClientRecordID(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, clientRecordPrefix+"{")
	if !ok || !strings.HasSuffix(rest, "}") {
		return "", false
	}
	return rest[:len(rest)-1], true
}

// UnixMillis renders t as Unix milliseconds, as the registry stores times
// and the scripts take "now". A time before 1970 renders negative, which
// the scripts refuse.
func UnixMillis(t time.Time) string {
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// TxRedis is what keeping the registry needs of a Redis client: a
// MULTI/EXEC transaction, HMGET and WATCH. redis.UniversalClient has them.
type TxRedis interface {
	TxPipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	HMGet(ctx context.Context, key string, fields ...string) *redis.SliceCmd
	Watch(ctx context.Context, fn func(*redis.Tx) error, keys ...string) error
}

// recordIdentity are the fields that tell one Client's record from
// another's under the same client ID.
var recordIdentity = []string{RegistryHost, RegistryPID, RegistryStarted}

// fieldOf is the value of field in fields (field, value pairs); "" when
// it has none.
func fieldOf(fields []string, field string) string {
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i] == field {
			return fields[i+1]
		}
	}
	return ""
}

// sameRecord reports whether got (the recordIdentity fields read back)
// are those of fields.
func sameRecord(got []any, fields []string) bool {
	for i, f := range recordIdentity {
		if v, _ := got[i].(string); v != fieldOf(fields, f) {
			return false
		}
	}
	return true
}

// OtherClient reads the record at key and returns "host pid <pid>" of the
// Client that wrote it when that is not the one whose record fields are
// and it is alive at now (RecordAlive: another Client running under the
// same client ID); "" when there is no record, it is this one's, or its
// Client stopped (a record is kept for a while after its Client is gone).
func OtherClient(ctx context.Context, r TxRedis, key string, fields []string, now time.Time) (string, error) {
	got, err := r.HMGet(ctx, key, append(recordIdentity[:len(recordIdentity):len(recordIdentity)], RegistrySeen, RegistryBeat)...).Result()
	if err != nil {
		return "", fmt.Errorf("warden: client registry %s: %w", key, err)
	}
	if got[0] == nil || sameRecord(got, fields) {
		return "", nil
	}
	seen, _ := got[len(recordIdentity)].(string)
	beat, _ := got[len(recordIdentity)+1].(string)
	if !RecordAlive(seen, beat, now) {
		return "", nil
	}
	host, _ := got[0].(string)
	pid, _ := got[1].(string)
	return "host " + host + " pid " + pid, nil
}

// UnregisterClient deletes the record at key if it is still the one
// written with fields: another Client using the same client ID may have
// written its own since, which stays. It reports whether it deleted it.
func UnregisterClient(ctx context.Context, r TxRedis, key string, fields []string) (bool, error) {
	deleted := false
	err := r.Watch(ctx, func(tx *redis.Tx) error {
		got, err := tx.HMGet(ctx, key, recordIdentity...).Result()
		if err != nil || got[0] == nil || !sameRecord(got, fields) {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, key)
			return nil
		})
		deleted = err == nil
		return err
	}, key)
	if err != nil {
		return false, fmt.Errorf("warden: client registry %s: %w", key, err)
	}
	return deleted, nil
}

// CloseClientRecord writes the record at key one last time, fields
// (field, value pairs: the whole record, RegistryClosed among them) with
// the TTL ttl, unless another Client using the same client ID wrote its
// own since, which stays. A record that is gone (lost in a restart) is
// written whole. It reports whether it wrote.
func CloseClientRecord(ctx context.Context, r TxRedis, key string, fields []string, ttl time.Duration) (bool, error) {
	args := make([]any, len(fields))
	for i, f := range fields {
		args[i] = f
	}
	wrote := false
	err := r.Watch(ctx, func(tx *redis.Tx) error {
		got, err := tx.HMGet(ctx, key, recordIdentity...).Result()
		if err != nil || (got[0] != nil && !sameRecord(got, fields)) {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, args...)
			p.PExpire(ctx, key, ttl)
			return nil
		})
		wrote = err == nil
		return err
	}, key)
	if err != nil {
		return false, fmt.Errorf("warden: client registry %s: %w", key, err)
	}
	return wrote, nil
}

// RegisterClient writes a client's registry record at key: fields (field,
// value pairs, at least one pair) and the TTL ttl, in one MULTI/EXEC, so
// a record lost in a restart comes back whole at the next write. It
// replaces what the key held: a Client started again under the ID of one
// that closed keeps nothing of the old record (its closed mark above all).
func RegisterClient(ctx context.Context, r TxRedis, key string, fields []string, ttl time.Duration) error {
	args := make([]any, len(fields))
	for i, f := range fields {
		args[i] = f
	}
	_, err := r.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key)
		p.HSet(ctx, key, args...)
		p.PExpire(ctx, key, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("warden: client registry %s: %w", key, err)
	}
	return nil
}
