// Package messages is warden's actor protocol: the plain structs an actor
// application sends to a Client's engine (Client.PID) and the replies and
// events it gets back.
//
// Every message is sent as a pointer and never mutated after sending.
// Deadlines travel as time.Time, never as a context, channel or func.
// Requests are answered to the sender of the request (ctx.Request in
// protoactor-go), so an actor never blocks its mailbox waiting for a lock.
//
// # The protocol
//
// Actor applications built on protoactor-go take and release locks
// without blocking their mailbox. Pass your actor system to the Client
// with client.WithActorSystem(sys) and send these structs to c.PID() with
// ctx.Request; the replies come back as messages:
//
//   - [Acquire] → [Acquired] or [AcquireFailed]. Lease 0 is watchdog mode,
//     any other at least [MinLease];
//     Deadline bounds the wait; Watch: true subscribes the sender to
//     [LockLost]. Kind selects the primitive: KindLock, KindFairLock (Wait
//     is its place-keeping allowance), KindReadLock, KindWriteLock,
//     KindFencedLock (Acquired.Token is the fencing token), KindSpinLock
//     (BackOff spaces its polls), KindNonReentrantLock,
//     KindNonReentrantFairLock (the holder's second acquire:
//     ErrAlreadyHeld), KindGroupLock (Values, all or none); and for waits
//     on the counting kinds, KindSemaphore (Permits), KindPermitSemaphore
//     (Acquired.PermitID; Permits > 1 takes several, Acquired.PermitIDs)
//     and KindCountDownLatch (await zero).
//   - [Cancel] withdraws a pending Acquire, which is then answered with
//     AcquireFailed.
//   - [Release] → [Released] or [ReleaseFailed] (a group lock's carries its
//     Values).
//   - [Extend] → [Extended] or [ExtendFailed]: a fixed-lease holding's lease
//     set anew.
//   - [Watch] → [Watched], then [LockLost] if the holding is lost.
//
// Owners must be unique across processes (start them with the Client's
// ID, c.ID()); a request ID must be unique among its owner's requests.
// examples/actorapp has an actor that keeps answering pings while its
// Acquire waits (go run ./examples/actorapp).
//
// This package imports only the standard library. Together with client and
// sim it is warden's supported API; actors and redisio are internal engine
// packages.
package messages
