// Package sim is warden's deterministic simulation: Run starts N simulated
// clients, each a whole warden engine, against a simulated Redis (miniredis
// running the production scripts) on one simulated clock, injects the
// faults the options allow (latency, lost requests, replies and messages,
// partitions, crashes, pauses, Redis restarts, clock jumps) as its seed
// draws them, and checks the recorded history: mutual exclusion, told
// before, fencing, starvation, a permit-expirable semaphore's permits, a
// count-down latch's zero and linearizability (porcupine), whose model of
// a group lock (asked for in Options.Kinds: FamilyKinds) is its
// all-or-none check. One seed gives one trace, byte for byte. WriteTimeline draws a run as HTML;
// cmd/warden-sim runs many seeds.
//
// The workload's owners talk to the engines by messages, as an actor
// application does. Some of them take MultiLocks over the run's reentrant
// and fair locks, with the decisions client.MultiLock makes (package
// internal/multi): every member's operations and holds are ordinary ones,
// under every check above, and two checks look at the sets: all or none
// (an acquire answered held holds every member until its release; a
// failed one, or a released set, leaves none held) and multilock progress
// (MultiLocks sharing members neither deadlock nor livelock while their
// members are free). RunRedLock simulates RedLock over several
// independent simulated masters, with the decisions client.RedLock makes
// (package internal/quorum).
//
// Options.Workload runs the user's own actors instead (or next to the
// built-in workload): each process runs the actors the Workload's Actors
// builds, which talk to their engine by messages, share a key-value store
// that checks fencing tokens and a log stamped with the simulated time,
// and record events (Process.Record) that the Workload's Check reads, next
// to warden's own checks over their lock operations. Their steps run on
// the same scheduler and clock, under the same faults: one seed still
// gives one trace. See Workload and ExampleWorkload; examples/simulate is
// a job runner caught running a job twice without a fencing token.
//
// # Rules for a workload's actors
//
// Timers go through the simulated clock (Process.SendAfter, or
// Process.Clock) and randomness through Process.Rand, drawn from the seed.
// An actor must not block (no time.Sleep, no waiting on a channel or a
// future): a step that does is reported with the actor and the step after
// Workload.StepTimeout, and a panic ends only that seed, with its stack.
// Sweep seeds in an ordinary go test with RunSeeds; a failing seed replays
// exactly with Run and that Options.Seed (Options.KeepTrace for the
// trace's lines), and Result.WriteTimelineFile draws it as HTML: each
// process's lock holds, the workload's events on its rows, the faults and
// the violations. warden's own checks run over the actors' lock requests
// too and report what the injected faults excuse. Options.Faults chooses
// the faults (AllFaults for all); a Redis restart loses the fencing
// counter, so tokens start again from 1.
package sim
