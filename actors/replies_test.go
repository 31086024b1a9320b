package actors

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/warden-go/warden/messages"
)

// Each failure reply names the request it answers, carries the error as it
// is, and the holding it was for where the message has one.
func TestFailureRepliesNameTheirRequest(t *testing.T) {
	err := errors.New("boom")
	assert.Equal(t, &messages.AcquireFailed{Name: "n", Kind: messages.KindFairLock, Owner: "o", RequestID: "r", Err: err},
		acquireFailed(&messages.Acquire{Name: "n", Kind: messages.KindFairLock, Owner: "o", RequestID: "r"}, err))
	assert.Equal(t, &messages.ReleaseFailed{Name: "n", Kind: messages.KindReadLock, Owner: "o", RequestID: "r", Err: err,
		Holding: 7}, releaseFailed(&messages.Release{Name: "n", Kind: messages.KindReadLock, Owner: "o", RequestID: "r"}, err, 7))
	assert.Equal(t, &messages.ExtendFailed{Name: "n", Kind: messages.KindLock, Owner: "o", RequestID: "r", Err: err,
		Holding: 3}, extendFailed(&messages.Extend{Name: "n", Kind: messages.KindLock, Owner: "o", RequestID: "r"}, err, 3))
	assert.Equal(t, &messages.Watched{Name: "n", Kind: messages.KindLock, Owner: "o", Err: err},
		watchFailed(&messages.Watch{Name: "n", Kind: messages.KindLock, Owner: "o"}, err))
}

// An owner is renewed while registered and not paused.
func TestKeyRenewalsRenewed(t *testing.T) {
	r := keyRenewals{registered: map[string]*registration{}, more: &renewalsMore{paused: map[string]bool{}}}
	assert.False(t, r.renewed("o"), "not registered")
	r.registered["o"] = &registration{owner: "o"}
	assert.True(t, r.renewed("o"))
	r.more.paused["o"] = true
	assert.False(t, r.renewed("o"), "paused")
}
