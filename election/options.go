package election

import (
	"time"

	"github.com/warden-go/warden/messages"
)

// Option configures an Election.
type Option func(*options) error

type options struct {
	resync time.Duration
}

func defaultOptions() options {
	return options{resync: time.Minute}
}

// WithResync sets how long Observe goes without news before it reads the
// leader again, a safety net for an announcement lost while its
// subscription was reconnecting (it also reads the leader after every
// reconnect). Observers learn of new leaders from the announcements, not
// from these reads. The default is 1 minute.
func WithResync(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return messages.Invalid("resync", "%v is not positive", d)
		}
		o.resync = d
		return nil
	}
}
