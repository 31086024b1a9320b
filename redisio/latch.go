package redisio

import (
	"context"
	"strconv"
)

var (
	latchTrySetCountScript = newScript("latch_trysetcount")
	latchCountDownScript   = newScript("latch_countdown")
	latchDeleteScript      = newScript("latch_delete")
)

// LatchZeroMessage is published on a count-down latch's channel when its
// count reaches 0 (Redisson's CountDownLatchPubSub.ZERO_COUNT_MESSAGE): wake
// every waiter.
const LatchZeroMessage = "0"

// LatchNewCountMessage is published on a count-down latch's channel when a
// count is set (Redisson's CountDownLatchPubSub.NEW_COUNT_MESSAGE).
const LatchNewCountMessage = "1"

// LatchChannel is the pub/sub channel of a count-down latch:
// redisson_countdownlatch__channel__{name}, the name in braces whatever it
// holds (Redisson does not use prefixName here).
func LatchChannel(name string) string {
	return "redisson_countdownlatch__channel__{" + name + "}"
}

// LatchTrySetCount sets the latch's count (at least 1) if the latch does
// not exist, and then publishes LatchNewCountMessage. It reports whether it
// set it.
func (s *Scripts) LatchTrySetCount(ctx context.Context, r Redis, name string, count int64) (bool, error) {
	return runFlag(ctx, r, latchTrySetCountScript, "latch try set count", name, []string{name, LatchChannel(name)},
		strconv.FormatInt(count, 10), LatchNewCountMessage, s.publish)
}

// LatchCountDown decrements the latch and returns the count after, never
// below 0. At 0 or below the latch is deleted, and LatchZeroMessage is
// published exactly when the count reached 0. A missing latch stays
// missing: it returns 0 and publishes nothing. It is applied once per
// reqID: a repeat returns the first result.
func (s *Scripts) LatchCountDown(ctx context.Context, r Redis, name, reqID string) (int64, error) {
	return s.countingWrite(ctx, r, latchCountDownScript, "latch count down", name, LatchChannel(name), reqID,
		LatchZeroMessage)
}

// LatchCount returns the latch's count: 0 when it does not exist, never
// negative.
func LatchCount(ctx context.Context, r Redis, name string) (int64, error) {
	n, err := readCount(ctx, r, "latch count", name)
	return max(n, 0), err
}

// LatchDelete deletes the latch and reports whether it existed. When it
// did, LatchZeroMessage is published: a missing latch counts zero, so every
// waiter may go. (Redisson's delete publishes LatchNewCountMessage, which
// leaves Redisson's own waiters blocked until they look again.)
func (s *Scripts) LatchDelete(ctx context.Context, r Redis, name string) (bool, error) {
	return runFlag(ctx, r, latchDeleteScript, "latch delete", name, []string{name, LatchChannel(name)}, LatchZeroMessage, s.publish)
}
