//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An interrupt while the command runs on its throwaway server stops the
// server and removes its directory before the interrupt ends the command.
func TestInterruptRemovesTheThrowawayServer(t *testing.T) {
	tmp := t.TempDir()
	outPath := filepath.Join(t.TempDir(), "out")
	out, err := os.Create(outPath)
	require.NoError(t, err)
	defer out.Close()
	exe, err := os.Executable()
	require.NoError(t, err)
	// This test binary stands in for the command (TestMain).
	cmd := exec.Command(exe, "-only", "a", "-runs", "1", "-duration", "1m", "-svg", "")
	cmd.Env = append(os.Environ(), childEnv+"=1", "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	said := func() string {
		b, err := os.ReadFile(outPath)
		require.NoError(t, err)
		return string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(said(), "warden-bench: workloads") {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the command never started its workloads; it said: %s", said())
		}
		time.Sleep(20 * time.Millisecond)
	}
	dirs, err := filepath.Glob(filepath.Join(tmp, "warden-bench-*"))
	require.NoError(t, err)
	require.Len(t, dirs, 1, "the throwaway server's directory, while it runs")

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the command said: %s", said())
	status, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	assert.True(t, status.Signaled() && status.Signal() == syscall.SIGINT, "ended by the interrupt: %v", status)
	dirs, err = filepath.Glob(filepath.Join(tmp, "warden-bench-*"))
	require.NoError(t, err)
	assert.Empty(t, dirs, "the throwaway server's directory removed")
}
