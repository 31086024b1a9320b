// Package sim is warden's deterministic simulation: Run starts N simulated
// clients, each a whole warden engine, against a simulated Redis (miniredis
// running the production scripts) on one simulated clock, injects the
// faults the options allow (latency, lost requests, replies and messages,
// partitions, crashes, pauses, Redis restarts, clock jumps) as its seed
// draws them, and checks the recorded history: mutual exclusion, told
// before, fencing, starvation, a permit-expirable semaphore's permits, a
// count-down latch's zero and linearizability (porcupine). One seed
// gives one trace, byte for byte. WriteTimeline draws a run as HTML;
// cmd/warden-sim runs many seeds.
package sim
