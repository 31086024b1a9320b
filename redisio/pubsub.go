package redisio

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// EventKind tells what a pub/sub Event is.
type EventKind uint8

const (
	// EventMessage is a message published on a subscribed channel.
	EventMessage EventKind = iota + 1
	// EventSubscribed confirms a subscription (also sent again for every
	// channel when the connection is re-established).
	EventSubscribed
	// EventUnsubscribed confirms an unsubscription.
	EventUnsubscribed
	// EventPong answers Ping.
	EventPong
)

// Event is one thing read from the pub/sub connection.
type Event struct {
	Kind    EventKind
	Channel string
	Payload string
}

// PubSub is the engine's single pub/sub connection. Subscribe and
// Unsubscribe only send; their confirmations arrive through Receive.
// Receive reconnects (and resubscribes every channel) after a connection
// error on its next call.
type PubSub interface {
	Subscribe(ctx context.Context, channels ...string) error
	Unsubscribe(ctx context.Context, channels ...string) error
	// Receive waits up to timeout for the next event. A timeout returns an
	// error for which IsTimeout is true.
	Receive(ctx context.Context, timeout time.Duration) (Event, error)
	Ping(ctx context.Context) error
	Close() error
}

// Subscriber is what NewPubSub needs of a Redis client.
type Subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// NewPubSub opens a pub/sub connection with no channel subscribed yet. The
// connection is made on first use.
func NewPubSub(ctx context.Context, r Subscriber) PubSub {
	return &goRedisPubSub{ps: r.Subscribe(ctx)}
}

type goRedisPubSub struct {
	ps *redis.PubSub
}

func (p *goRedisPubSub) Subscribe(ctx context.Context, channels ...string) error {
	if err := p.ps.Subscribe(ctx, channels...); err != nil {
		return fmt.Errorf("warden: subscribe: %w", err)
	}
	return nil
}

func (p *goRedisPubSub) Unsubscribe(ctx context.Context, channels ...string) error {
	if err := p.ps.Unsubscribe(ctx, channels...); err != nil {
		return fmt.Errorf("warden: unsubscribe: %w", err)
	}
	return nil
}

func (p *goRedisPubSub) Receive(ctx context.Context, timeout time.Duration) (Event, error) {
	for {
		msg, err := p.ps.ReceiveTimeout(ctx, timeout)
		if err != nil {
			return Event{}, err
		}
		switch m := msg.(type) {
		case *redis.Message:
			return Event{Kind: EventMessage, Channel: m.Channel, Payload: m.Payload}, nil
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				return Event{Kind: EventSubscribed, Channel: m.Channel}, nil
			case "unsubscribe", "sunsubscribe":
				return Event{Kind: EventUnsubscribed, Channel: m.Channel}, nil
			}
		case *redis.Pong:
			return Event{Kind: EventPong}, nil
		}
	}
}

func (p *goRedisPubSub) Ping(ctx context.Context) error {
	return p.ps.Ping(ctx)
}

func (p *goRedisPubSub) Close() error {
	return p.ps.Close()
}

// IsTimeout reports whether err is a read timeout of Receive, after which
// the connection is still usable.
func IsTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// IsClosed reports whether err means the pub/sub was closed.
func IsClosed(err error) bool {
	return errors.Is(err, redis.ErrClosed)
}
