package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
)

// inspect's table names the value each holder of a group lock holds: the
// holders of one group are otherwise rows alike.
func TestInspectTableNamesAGroupLockHoldersValues(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	c := newClient(t, rdb)
	ctx := context.Background()
	require.NoError(t, c.GroupLock("g:orders", "a", "b").LockLease(ctx, time.Minute))
	require.NoError(t, c.GroupLock("g:orders", "c").LockLease(ctx, time.Minute))

	out := ok(t, nil, "--addr", srv.Addr(), "inspect", "g:orders")
	assert.Contains(t, out, "kind:  group_lock")
	assert.Regexp(t, `(?m)^  VALUE\s+OWNER\s+COUNT\s+MODE\s+CLIENT`, out)
	for _, v := range []string{"a", "b", "c"} {
		assert.Regexp(t, `(?m)^  `+v+`\s+`+c.ID()+`:\d+\s+1\s+-\s+`+c.ID()+`\s`, out, "value %s", v)
	}
	// Other kinds keep their table.
	require.NoError(t, c.Lock("g:plain").LockLease(ctx, time.Minute))
	out = ok(t, nil, "--addr", srv.Addr(), "inspect", "g:plain")
	assert.Regexp(t, `(?m)^  OWNER\s+COUNT\s+MODE\s+CLIENT`, out)
	assert.NotContains(t, out, "VALUE")
}
