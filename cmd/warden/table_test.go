package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
)

// ls aligns its columns by display width: a CJK name or an emoji takes two
// columns a character, a combining accent none, so KIND starts at one
// column in every row (it started one column late per wide character).
func TestLsAlignsWideCharacters(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	// Display widths: 注文:ロック 11, 🔒:lock 7, café (a combining
	// accent) 4, plain 5.
	names := []string{"w:注文:ロック", "w:🔒:lock", "w:cafe\u0301", "w:plain"}
	for _, n := range names {
		holdRaw(t, rdb, n, "id-1:1", 1, time.Minute)
	}
	out := ok(t, nil, "--addr", srv.Addr(), "ls", "w:*")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 1+len(names), out)
	const kindAt = 2 + 11 + 2 // the widest name, then two spaces
	for _, l := range lines {
		name, _, _ := strings.Cut(l, "  ")
		pad := strings.TrimLeft(l[len(name):], " ")
		assert.Equal(t, kindAt, displayWidth(name)+len(l)-len(name)-len(pad), "KIND starts at column %d: %q", kindAt, l)
		assert.True(t, strings.HasPrefix(pad, "KIND") || strings.HasPrefix(pad, "lock "), "%q", l)
	}
	assert.Contains(t, out, "w:🔒:lock"+strings.Repeat(" ", kindAt-9)+"lock ")
	assert.Contains(t, out, "w:注文:ロック  lock ")
	assert.Contains(t, out, "w:cafe\u0301"+strings.Repeat(" ", kindAt-6)+"lock ")
}

func TestDisplayWidth(t *testing.T) {
	for s, want := range map[string]int{
		"": 0, "abc": 3, "注文": 4, "🔒": 2, "cafe\u0301": 4, "❤\ufe0f": 1, "ｆｕｌｌ": 8, "한국": 4,
	} {
		assert.Equal(t, want, displayWidth(s), "%q", s)
	}
	var b bytes.Buffer
	tb := &table{w: &b}
	tb.row("A", "B", "C")
	tb.row("注文", "x", "")
	tb.flush()
	assert.Equal(t, "A     B  C\n注文  x  \n", b.String())
}
