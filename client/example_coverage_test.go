package client_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// go doc alone teaches each primitive and the main options: each has a
// runnable example with its output checked.
func TestEveryPrimitiveHasARunnableExample(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var files []*ast.File
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	runnable := map[string]bool{}
	for _, ex := range doc.Examples(files...) {
		if ex.Output != "" || ex.EmptyOutput {
			runnable[ex.Name] = true
		}
	}
	for _, name := range []string{
		"Client_Lock", "Lock_TryLockWait", "Lock_LockLease", "Lock_Lost", "Lock_Do",
		"Client_FairLock", "Client_ReadWriteLock", "FencedLock_LockToken", "Client_SpinLock",
		"Client_Semaphore", "Client_PermitExpirableSemaphore", "Client_CountDownLatch",
		"Semaphore_TrySetPermitsTTL", "Semaphore_SetPermits", "Semaphore_ReleaseIfExists",
		"PermitExpirableSemaphore_ReleasePermits", "PermitExpirableSemaphore_RemainLease",
		"PermitExpirableSemaphore_SetPermits", "PermitExpirableSemaphore_AcquirePermits", "CountDownLatch_Delete",
		"NewMultiLock", "NewRedLock", "Client_CloseAndRelease",
		"Client_StripedLock", "StripedLock_ForKeys", "Client_GroupLock",
		"WithWatchdogTimeout", "WithOwner", "WithClientID", "WithLogger",
		"Client_NonReentrantLock", "Client_NonReentrantFairLock", "Lock_Extend",
	} {
		assert.True(t, runnable[name], "a runnable Example%s with // Output:", name)
	}
}
