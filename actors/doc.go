// Package actors is warden's engine: one actor per concern, one file per
// actor.
//
//   - root (root_actor.go): spawns a key actor per (name, kind) on first use,
//     routes every messages.* request to it, and stops idle key actors
//     (passivation) with a handshake so no request is lost to a stopping
//     actor.
//   - key actor (key_actor.go): owns one lock name's local reentrancy table,
//     FIFO waiter queue, renewal registrations and the one Redis request in
//     flight.
//   - subscriber (subscriber_actor.go): owns the client's single pub/sub
//     connection and fans unlock messages out to key actors.
//   - renewer (renewer_actor.go): renews every watchdog-mode lock in one
//     batched script per tick and reports the ones found gone.
//
// No mutex guards engine state: state lives in an actor and changes only in
// its Receive. Redis I/O runs on goroutines the actor owns and waits for,
// and comes back as a message. Every timer comes from the injected
// clockwork.Clock, only sends a message, carries a generation so stale
// ticks are ignored, and is stopped in Stopping.
//
// This package is internal to warden: only client, messages and sim are
// supported API.
package actors
