package bench

// QueuedLocks counts the Locks queued on name in a contender that queues them
// in the process (warden-bare).
func QueuedLocks(c *Contender, name string) int { return c.waiters(name) }
