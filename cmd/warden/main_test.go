package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/warden-go/warden/internal/redistest"
)

// bin is the warden binary the tests run, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "warden-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "warden")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// cmdTimeout bounds every run of the binary.
const cmdTimeout = 2 * time.Minute

// warden runs the binary with args, stdin from stdin, and the environment
// env added to a clean one (no REDIS_URL or REDIS_PASSWORD of the test's
// own).
func warden(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else {
		require.NoError(t, err, "run warden %v", args)
	}
	require.NotContains(t, r.stderr, "panic", "warden %v", args)
	require.NotContains(t, r.stderr, "goroutine ", "warden %v", args)
	return r
}

// ok runs the binary and requires exit 0.
func ok(t *testing.T, env []string, args ...string) string {
	t.Helper()
	r := warden(t, env, "", args...)
	require.Equal(t, 0, r.code, "warden %v: %s", args, r.stderr)
	return r.stdout
}

// failsWith runs the binary and requires exit code and one line on
// stderr, "warden: ..." holding each of want.
func failsWith(t *testing.T, code int, env []string, args []string, want ...string) result {
	t.Helper()
	r := warden(t, env, "", args...)
	require.Equal(t, code, r.code, "warden %v: stdout %q stderr %q", args, r.stdout, r.stderr)
	line := strings.TrimSuffix(r.stderr, "\n")
	require.NotContains(t, line, "\n", "one line: %q", r.stderr)
	require.True(t, strings.HasPrefix(line, "warden: "), "%q", line)
	for _, w := range want {
		require.Contains(t, line, w)
	}
	return r
}

// dirty is redistest.Dirty: the server's writes since its last save,
// unchanged across commands that wrote nothing.
func dirty(t *testing.T, rdb redis.Cmdable) int64 {
	t.Helper()
	return redistest.Dirty(t, rdb)
}
