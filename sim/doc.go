// Package sim is reserved for warden's deterministic simulation: simulated
// clients and Redis on one fake clock, fault injection and invariant
// checkers. It has no API yet; the engine already takes its clock through
// client.WithClock and reaches Redis only through package redisio, which is
// what a simulation needs to drive it.
package sim
