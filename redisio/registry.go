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
)

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

// TxRedis is what writing the registry needs of a Redis client: a
// MULTI/EXEC transaction. redis.UniversalClient has it.
type TxRedis interface {
	TxPipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// RegisterClient writes a client's registry record at key: fields (field,
// value pairs, at least one pair) and the TTL ttl, in one MULTI/EXEC, so
// a record lost in a restart comes back whole at the next write.
func RegisterClient(ctx context.Context, r TxRedis, key string, fields []string, ttl time.Duration) error {
	args := make([]any, len(fields))
	for i, f := range fields {
		args[i] = f
	}
	_, err := r.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, args...)
		p.PExpire(ctx, key, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("warden: client registry %s: %w", key, err)
	}
	return nil
}
