package client_test

import (
	"context"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
)

// TestNilContextIsRejected calls every exported method that takes a
// context.Context, on a valid handle of every type, with a nil context:
// each returns ErrInvalidArgument naming ctx, panics not, and writes
// nothing to Redis. The Client's own methods (Close) come last, and must
// leave it open.
func TestNilContextIsRejected(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	c := e.newClient(t)
	others := []*client.Client{e.newClient(t), e.newClient(t)}
	rw := c.ReadWriteLock("nilctx-rw")
	handles := []struct {
		what string
		h    any
	}{
		{"Lock", c.Lock("nilctx-lock")},
		{"FairLock", c.FairLock("nilctx-fair")},
		{"SpinLock", c.SpinLock("nilctx-spin")},
		{"FencedLock", c.FencedLock("nilctx-fenced")},
		{"ReadLock", rw.ReadLock()},
		{"WriteLock", rw.WriteLock()},
		{"ReadWriteLock", rw},
		{"Semaphore", c.Semaphore("nilctx-semaphore")},
		{"PermitExpirableSemaphore", c.PermitExpirableSemaphore("nilctx-permits")},
		{"CountDownLatch", c.CountDownLatch("nilctx-latch")},
		{"MultiLock", client.NewMultiLock(c.Lock("nilctx-m1"), c.Lock("nilctx-m2"))},
		{"GroupLock", c.GroupLock("nilctx-group", "a", "b")},
		{"StripedLock.For", c.StripedLock("nilctx-striped", 4).For("k")},
		{"StripedLock.ForKeys", c.StripedLock("nilctx-striped", 4).ForKeys("k", "l", "m")},
		{"RedLock", client.NewRedLock(c.Lock("nilctx-red"), others[0].Lock("nilctx-red"), others[1].Lock("nilctx-red"))},
		{"Client", c},
	}
	var failed []string
	calls := 0
	for _, h := range handles {
		v := reflect.ValueOf(h.h)
		for i := range v.NumMethod() {
			m := v.Method(i)
			if !takesContext(m.Type()) {
				continue
			}
			what := h.what + "." + v.Type().Method(i).Name
			calls++
			var out []reflect.Value
			call := m.Call
			if m.Type().IsVariadic() {
				call = m.CallSlice
			}
			if !assert.NotPanics(t, func() { out = call(nilCtxArgs(t, what, m.Type())) }, what) {
				failed = append(failed, what+" (panics)")
				continue
			}
			n := len(out)
			require.Positive(t, n, what)
			err, _ := out[n-1].Interface().(error)
			if !assert.ErrorIs(t, err, client.ErrInvalidArgument, what) || !assert.ErrorContains(t, err, "ctx", what) {
				failed = append(failed, what)
			}
		}
	}
	sort.Strings(failed)
	if len(failed) > 0 {
		t.Logf("methods that do not refuse a nil context: %v", failed)
	}
	assert.Greater(t, calls, 50, "every method taking a context was called")
	ctx := context.Background()
	assert.Empty(t, dataKeys(t, e.rdb), "nothing was written")
	l := c.Lock("nilctx-after")
	require.NoError(t, l.Lock(ctx), "the Client is still open")
	require.NoError(t, l.Unlock(ctx))
}

func takesContext(m reflect.Type) bool {
	for i := range m.NumIn() {
		if m.In(i) == reflect.TypeFor[context.Context]() {
			return true
		}
	}
	return false
}

// nilCtxArgs are the arguments of a method of type m: a nil context, 1 s
// durations, an hour from now for times, no variadic arguments, 1 for
// counts, "x" for strings, a function that returns its zero values.
func nilCtxArgs(t *testing.T, what string, m reflect.Type) []reflect.Value {
	args := make([]reflect.Value, m.NumIn())
	for i := range args {
		switch in := m.In(i); {
		case in == reflect.TypeFor[context.Context]():
			args[i] = reflect.Zero(in)
		case in == reflect.TypeFor[time.Duration]():
			args[i] = reflect.ValueOf(time.Second)
		case in == reflect.TypeFor[time.Time]():
			args[i] = reflect.ValueOf(time.Now().Add(time.Hour))
		case in.Kind() == reflect.Slice && m.IsVariadic() && i == len(args)-1:
			args[i] = reflect.MakeSlice(in, 0, 0)
		case in.Kind() == reflect.Int64:
			args[i] = reflect.ValueOf(int64(1))
		case in.Kind() == reflect.String:
			args[i] = reflect.ValueOf("x")
		case in.Kind() == reflect.Func:
			args[i] = reflect.MakeFunc(in, func([]reflect.Value) []reflect.Value {
				out := make([]reflect.Value, in.NumOut())
				for j := range out {
					out[j] = reflect.Zero(in.Out(j))
				}
				return out
			})
		default:
			t.Fatalf("%s: no plain argument for %v", what, in)
		}
	}
	return args
}
