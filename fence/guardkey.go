package fence

import "strings"

// The guard keys' prefixes: one for a key with a hash tag, another for a
// key without, so that the two forms never name the same guard. Both open
// with GuardNamespace.
const (
	taggedPrefix   = GuardNamespace + ":"
	untaggedPrefix = GuardNamespace + "{"
)

// GuardNamespace opens the name of every guard key. A key that opens with
// it could be a guard key, and is no resource: the Redis guard refuses it
// as a resource key and as any key of Eval.
const GuardNamespace = "warden:fence"

// GuardKey returns the name of the key in which the Redis guard keeps the
// highest token seen for key. It is in key's Cluster slot:
//
//   - a key with a hash tag ("{user:1}:balance") has its guard under the
//     same tag: "warden:fence:{user:1}:balance";
//   - a key without one ("balance") becomes the guard's tag, which hashes
//     as the whole key does: "warden:fence{balance}".
//
// A key without a hash tag that holds a '}' ("a}b", "x{}y") cannot be
// some other key's tag, and no fixed name can share its slot: such a key
// is refused with ErrInvalidArgument (give it a hash tag), on every
// client, a single node's too, so that a program behaves the same on a
// Cluster. So is an empty key, and a key in the guards' namespace (one
// that opens with GuardNamespace), which could be another key's guard.
func GuardKey(key string) (string, error) { return guardKey("key", key) }

// guardKey is GuardKey, its errors naming field.
func guardKey(field, key string) (string, error) {
	if key == "" {
		return "", invalid(field, "empty")
	}
	if err := notGuard(field, key); err != nil {
		return "", err
	}
	if _, ok := hashTag(key); ok {
		return taggedPrefix + key, nil
	}
	if strings.IndexByte(key, '}') >= 0 {
		return "", invalid(field, "%q has a '}' but no hash tag, so no guard key can share its Cluster slot; "+
			"give the key a hash tag ({...})", key)
	}
	return untaggedPrefix + key + "}", nil
}

// hashTag returns key's Cluster hash tag: what lies between its first '{'
// and the first '}' after it, when that is not empty.
func hashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return "", false
	}
	return key[open+1 : open+1+end], true
}

// notGuard refuses key, the field named field, when it is in the guards'
// namespace.
func notGuard(field, key string) error {
	if strings.HasPrefix(key, GuardNamespace) {
		return invalid(field, "%q opens with %q, the guard keys' namespace: it could be a guard key", key, GuardNamespace)
	}
	return nil
}
