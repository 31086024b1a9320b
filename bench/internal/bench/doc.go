// Package bench holds the measurements shared by the Go benchmarks and
// cmd/warden-bench, so both report the same thing. It and the peers it
// compares warden with live in the benchmark's own module, out of the
// dependencies of the module users import.
//
// A [Contender] is one lock library on its own go-redis client (all built
// from [ClientOptions], so every library gets the same pool): warden,
// redsync, bsm/redislock, a textbook SET NX PX lock, Redisson's bare RLock
// scripts (a baseline: Redisson's wire work with no engine), and the
// 2xPING floor; rueidislock runs on a rueidis client of its own, whose
// commands a wrapper counts.
// The workloads run one contender at a time and return plain numbers per
// run; the caller alternates contenders, repeats runs and takes medians:
//
//   - [RunThroughput]: lock+unlock pairs on distinct names (workloads a, b);
//   - [RunContention]: goroutines on one name with a critical section (c);
//   - [RunRenewal]: Redis and CPU cost of keeping many locks alive (d);
//   - [RunWaiters]: memory and wake-up of many waiters on one name (e);
//   - [RunPassivation]: engine memory after touching many names (f).
//
// Redis cost is counted twice: the commands a contender's client sent
// (a go-redis hook, plus pub/sub commands, which bypass hooks) and the calls
// Redis executed (INFO commandstats deltas, which include the calls made
// inside scripts). The same hook counts the script calls each round trip
// carried ([Batches]): for warden, the batches of its engine's automatic
// pipelining.
package bench
