package election_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/election"
	"github.com/warden-go/warden/internal/await"
)

// newClient starts a Client on rdb with the watchdog timeout given, closed
// at cleanup (unless the test closed it).
func newClient(t *testing.T, rdb redis.UniversalClient, watchdog time.Duration) *client.Client {
	t.Helper()
	c, err := client.New(rdb, client.WithWatchdogTimeout(watchdog))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// newElection returns a candidate in the election name, resigned at
// cleanup.
func newElection(t *testing.T, c *client.Client, rdb redis.UniversalClient, name string, opts ...election.Option) *election.Election {
	t.Helper()
	e, err := election.New(c, name, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Resign(context.Background()) })
	return e
}

// campaign runs e.Campaign(value) in a goroutine; the channel gets its
// result. The campaign ends at cleanup at the latest.
func campaign(t *testing.T, e *election.Election, value string) <-chan error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		done <- e.Campaign(ctx, value)
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return done
}

// fencedStore is the resource a leader writes to: it remembers the
// highest token it accepted and refuses a write with a lower one.
type fencedStore struct {
	mu      sync.Mutex
	highest int64
	writes  []string
}

func (s *fencedStore) write(token int64, what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return fmt.Errorf("token %d refused: %d was accepted", token, s.highest)
	}
	s.highest = token
	s.writes = append(s.writes, what)
	return nil
}

// childLeaderEnv carries a child's "addr|name|watchdog|value".
const childLeaderEnv = "WARDEN_ELECTION_CHILD"

// leadUntilKilled is the child process: it campaigns, prints "leader
// <token>", then answers each "write" line on stdin with "write <token>"
// (the token of the term it won, as a leader that does not yet know it
// lost would use it), and prints "lost" when its term ends.
func leadUntilKilled(spec string) int {
	parts := strings.Split(spec, "|")
	watchdog, err := time.ParseDuration(parts[2])
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	rdb := redis.NewClient(&redis.Options{Addr: parts[0]})
	c, err := client.New(rdb, client.WithWatchdogTimeout(watchdog))
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	e, err := election.New(c, parts[1])
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	if err := e.Campaign(context.Background(), parts[3]); err != nil {
		fmt.Println("error:", err)
		return 2
	}
	token := e.Token()
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	// The term's Lost, taken before the parent hears of the term: taken by
	// the goroutine, it could come after a pause right after "leader"
	// ended the term, and be the next term's.
	lost := e.Lost()
	say("leader %d", token)
	go func() {
		<-lost
		say("lost")
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "write" {
			say("write %d", token)
		}
	}
	return 0
}

// child is a leader in a child process of the test binary.
type child struct {
	cmd   *exec.Cmd
	in    *os.File
	lines chan string
	token int64
}

// startChild starts a child candidate in election name on addr and waits
// until it leads; it is killed at cleanup.
func startChild(t *testing.T, addr, name string, watchdog time.Duration, value string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childLeaderEnv+"="+strings.Join([]string{addr, name, watchdog.String(), value}, "|"))
	stdin, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdin = stdin
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	_ = stdin.Close()
	ch := &child{cmd: cmd, in: w, lines: make(chan string, 16)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		s := bufio.NewScanner(out)
		for s.Scan() {
			ch.lines <- s.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = w.Close()
		<-read // stdout closes when the child is gone
		_ = cmd.Wait()
	})
	line := await.Value(t, ch.lines, 15*time.Second, "the child's election")
	_, err = fmt.Sscanf(line, "leader %d", &ch.token)
	require.NoError(t, err, "the child said %q", line)
	return ch
}
