package exampleredis

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoFile reads a file at the repository's root.
func repoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	require.NoError(t, err, "the repository has %s", name)
	return string(b)
}

// A new user finds the licence and the install command.
func TestGettingStarted(t *testing.T) {
	t.Run("LICENSE is the Apache License 2.0", func(t *testing.T) {
		lic := repoFile(t, "LICENSE")
		assert.Contains(t, lic, "Apache License\n                           Version 2.0, January 2004")
		assert.Contains(t, lic, "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION")
		assert.Contains(t, lic, "END OF TERMS AND CONDITIONS")
		assert.Contains(t, lic, "Copyright 2026 The warden Authors")
		assert.NotContains(t, lic, "[yyyy]", "the boilerplate's fields are filled in")
	})
	t.Run("README has the install line before the quickstart's code", func(t *testing.T) {
		readme := repoFile(t, "README.md")
		install := strings.Index(readme, "\ngo get github.com/warden-go/warden\n")
		require.GreaterOrEqual(t, install, 0, "README.md has the go get line")
		code := strings.Index(readme, "```go")
		require.GreaterOrEqual(t, code, 0)
		assert.Less(t, install, code, "the install line comes before the first Go code")
		assert.Contains(t, readme, "## License", "README.md has a License section")
		assert.Contains(t, readme, "[Apache License 2.0](LICENSE)")
	})
}
