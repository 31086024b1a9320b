package client

import (
	"context"
	"fmt"
	"sync"
)

// Locker adapts the handle to sync.Locker. The goroutines that share it
// exclude each other as with a sync.Mutex: Lock waits until no other
// goroutine holds the handle's Locker (every Locker of one handle is the
// same one), then takes the distributed lock as the handle's one owner;
// Unlock, which any goroutine may call, releases the distributed lock and
// lets the next goroutine in. The handle's own methods are not excluded:
// a goroutine that calls them while another holds the Locker reenters the
// lock as the same owner. Locker's methods wait without limit and panic
// on any error, like etcd's concurrency.NewLocker; Unlock panics too when
// the Locker is not locked, without a call to Redis.
func (l *Lock) Locker() sync.Locker { return locker{l} }

type locker struct{ l *Lock }

func (k locker) Lock() {
	if err := k.l.check(); err != nil {
		panic(err)
	}
	slot := k.l.slot()
	slot <- struct{}{}
	if err := k.l.Lock(context.Background()); err != nil {
		<-slot
		panic(err)
	}
}

func (k locker) Unlock() {
	if k.l == nil || k.l.c == nil {
		panic(k.l.check()) // a nil handle, or one a nil Client made
	}
	slot := k.l.slot()
	if len(slot) == 0 {
		panic(fmt.Errorf("warden: %s: unlock of an unlocked Locker: %w", k.l.name, ErrNotHeld))
	}
	err := k.l.Unlock(context.Background())
	<-slot
	if err != nil {
		panic(err)
	}
}

// slot returns the handle's Locker slot, made on first use: handles that
// never serve as a Locker do not carry one.
func (l *Lock) slot() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.local == nil {
		l.local = make(chan struct{}, 1)
	}
	return l.local
}
