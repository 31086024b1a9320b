package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
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

// unlock --force without --yes, its input /dev/null (cron, "ssh host
// warden ... </dev/null"): /dev/null is a character device but no
// terminal, so it refuses at once, with no prompt, and unlocks nothing.
func TestUnlockWithInputFromDevNullAsksForYes(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	c := newClient(t, rdb)
	ctx := context.Background()
	l := c.Lock("n:held")
	require.NoError(t, l.LockLease(ctx, time.Minute))

	devNull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devNull.Close()
	cctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, "--addr", srv.Addr(), "unlock", "--force", "n:held")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	cmd.Stdin = devNull
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stdout %q stderr %q", out.String(), errb.String())
	assert.Equal(t, exitRefused, ee.ExitCode())
	assert.Equal(t, `warden: unlock "n:held": no terminal to confirm on: pass --yes`, strings.TrimSpace(errb.String()))
	assert.Empty(t, out.String())
	held, err := l.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held)
}
