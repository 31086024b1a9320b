// Package messages is warden's actor protocol: the plain structs an actor
// application sends to a Client's engine (Client.PID) and the replies and
// events it gets back.
//
// Every message is sent as a pointer and never mutated after sending.
// Deadlines travel as time.Time, never as a context, channel or func.
// Requests are answered to the sender of the request (ctx.Request in
// protoactor-go), so an actor never blocks its mailbox waiting for a lock.
//
// This package imports only the standard library. Together with client and
// sim it is warden's supported API; actors and redisio are internal engine
// packages.
package messages
