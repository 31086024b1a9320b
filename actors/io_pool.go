package actors

import "sync"

// ioWorkers is how many goroutines the engine keeps for Redis calls. They
// keep their grown stacks, which a fresh goroutine per call would have to
// grow again every time.
const ioWorkers = 8

// ioPool runs the engine's Redis calls off the actors' mailboxes. A call is
// handed to an idle worker if one is waiting, else to a new goroutine, so
// handing off never blocks a mailbox. Root owns the pool: it starts it
// before any key actor and stops it, waiting for every call, after they
// all stopped.
type ioPool struct {
	jobs chan func()
	wg   sync.WaitGroup
}

func newIOPool() *ioPool {
	p := &ioPool{jobs: make(chan func())}
	p.wg.Add(ioWorkers)
	for range ioWorkers {
		go func() {
			defer p.wg.Done()
			for job := range p.jobs {
				job()
			}
		}()
	}
	return p
}

// run starts job on an idle worker or a new goroutine.
func (p *ioPool) run(job func()) {
	select {
	case p.jobs <- job:
	default:
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			job()
		}()
	}
}

// stop ends the workers once their calls return.
func (p *ioPool) stop() {
	close(p.jobs)
	p.wg.Wait()
}
