package main

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// onExit is what run puts back on its way out, the last added first: the
// affinities -pin set, the throwaway server and its directory. An
// interrupt or SIGTERM before run returns puts them back too, then ends
// the command by that signal, as it would have ended it anyway.
type onExit struct {
	mu   sync.Mutex
	fns  []func()
	sigs chan os.Signal
	quit chan struct{}
}

// newOnExit starts watching for an interrupt or SIGTERM until stop.
func newOnExit() *onExit {
	e := &onExit{sigs: make(chan os.Signal, 1), quit: make(chan struct{})}
	signal.Notify(e.sigs, os.Interrupt, syscall.SIGTERM)
	go e.watch()
	return e
}

// add has fn run on the way out.
func (e *onExit) add(fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fns = append(e.fns, fn)
}

// stop runs what was added and stops watching for signals.
func (e *onExit) stop() {
	signal.Stop(e.sigs)
	close(e.quit)
	e.undo()
}

// undo runs what was added, each once, the last first.
func (e *onExit) undo() {
	e.mu.Lock()
	fns := e.fns
	e.fns = nil
	e.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

func (e *onExit) watch() {
	select {
	case s := <-e.sigs:
		e.undo()
		signal.Stop(e.sigs)
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Signal(s) // its default action now: the command ends by it
		}
		time.Sleep(time.Second)
		os.Exit(1) // a signal whose default is not to end the process
	case <-e.quit:
	}
}
