package wardentest

import "testing"

// Only a (S/P)SUBSCRIBE command marks a connection as pub/sub, not a
// command whose argument holds the word.
func TestSubscribesReadsTheCommandName(t *testing.T) {
	for in, want := range map[string]bool{
		"*2\r\n$9\r\nsubscribe\r\n$3\r\nabc\r\n":                     true,
		"*2\r\n$10\r\nSSUBSCRIBE\r\n$3\r\nabc\r\n":                   true,
		"*2\r\n$10\r\npsubscribe\r\n$1\r\n*\r\n":                     true,
		"*3\r\n$7\r\nevalsha\r\n$1\r\nx\r\n$13\r\nsubscribe:job\r\n": false,
		"*3\r\n$3\r\nset\r\n$9\r\nsubscribe\r\n$1\r\n1\r\n":          false,
		"":       false,
		"*1\r\n": false,
	} {
		if got := subscribes([]byte(in)); got != want {
			t.Errorf("subscribes(%q) = %v, want %v", in, got, want)
		}
	}
}
