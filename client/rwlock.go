package client

import "github.com/warden-go/warden/messages"

// ReadWriteLock is a handle on a read/write lock (Redisson's
// RReadWriteLock): any number of readers, or one writer. Its read and
// write locks share one owner, so the writer may also take the read lock
// (and keeps it after the write unlock: a downgrade); a reader can never
// take the write lock, not even the same owner.
type ReadWriteLock struct {
	read, write *Lock
}

// ReadWriteLock returns a handle on the read/write lock name, with a fresh
// owner unless WithOwner says otherwise.
func (c *Client) ReadWriteLock(name string, opts ...LockOption) *ReadWriteLock {
	read := c.newLock(name, messages.KindReadLock, opts)
	write := c.newLock(name, messages.KindWriteLock, append(opts[:len(opts):len(opts)], WithOwner(read.owner)))
	return &ReadWriteLock{read: read, write: write}
}

// ReadLock returns the shared side. Its IsLocked reports whether the lock
// is held for reading.
func (rw *ReadWriteLock) ReadLock() *Lock {
	if rw == nil {
		return nil // every call on a nil *Lock returns ErrInvalidArgument
	}
	return rw.read
}

// WriteLock returns the exclusive side. Its IsLocked reports whether the
// lock is held for writing. Its reentry adds the lease to the time left.
func (rw *ReadWriteLock) WriteLock() *Lock {
	if rw == nil {
		return nil
	}
	return rw.write
}
