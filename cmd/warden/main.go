package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	"github.com/mattn/go-isatty"
	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/client"
)

// The exit codes (see the package doc).
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitNotFound = 3
	exitNotLock  = 4
	exitRefused  = 5
	// exitProblem: doctor found the server short of what the family
	// needs.
	exitProblem = 6
	// exitInterrupted: SIGINT or SIGTERM ended the command (128 + 2, as
	// a shell reports a command ended by SIGINT).
	exitInterrupted = 130
)

const description = `Show who holds what in warden's (and Redisson's) locks on a Redis.

ls, inspect, watch, clients, doctor and acl only read; unlock --force and permits release are the only commands that write.

Exit codes: 0 success; 1 Redis unreachable or a Redis error; 2 usage (unknown command or flag, invalid NAME or GLOB); 3 nothing of the lock family under NAME, or (unlock) nobody holds it; 4 the key under NAME is no lock-family object, or unlock of a kind without holders (permits release: of a kind other than a semaphore); 5 refused (unlock or permits release not confirmed, or Redis refused the user: its password or its ACL); 6 doctor found a problem; 130 interrupted (SIGINT, SIGTERM; watch: 0). Every failure prints one line on standard error.`

// cli is the command line.
type cli struct {
	Addr       string        `help:"Redis address (host:port). Default: REDIS_URL's, else localhost:6379." placeholder:"HOST:PORT"`
	Cluster    []string      `help:"Redis Cluster nodes (host:port,...)." sep:"," placeholder:"HOST:PORT"`
	Sentinel   []string      `help:"Sentinel addresses (host:port,...)." sep:"," placeholder:"HOST:PORT"`
	MasterName string        `help:"Sentinel master name." default:"mymaster"`
	User       string        `help:"Redis ACL user. Default: REDIS_URL's."`
	Password   string        `help:"Redis password." env:"REDIS_PASSWORD"`
	Timeout    time.Duration `help:"Bound on each Redis call." default:"5s"`

	Ls      lsCmd      `cmd:"" help:"List the lock-family objects whose name matches GLOB."`
	Inspect inspectCmd `cmd:"" help:"Show one object in full."`
	Unlock  unlockCmd  `cmd:"" help:"Force-unlock a lock whoever holds it (waiters wake, the holder is told)."`
	Watch   watchCmd   `cmd:"" help:"Refresh a view of the held locks until interrupted."`
	Clients clientsCmd `cmd:"" help:"List the registered clients and flag holders whose client is not registered."`
	ACL     aclCmd     `cmd:"" name:"acl" help:"Print the Redis ACL rules a warden client (or --read-only, this command) needs; with --user NAME [--password P], a whole ACL SETUSER line for redis-cli."`
	Permits permitsCmd `cmd:"" help:"Give permits back to a semaphore (release)."`
	Doctor  doctorCmd  `cmd:"" help:"Check the server against what the lock family needs, one line per finding (exit 6 on a problem)."`
}

// app is what every command runs with.
type app struct {
	cli    *cli
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// terminal reports whether stdin is a terminal (unlock's prompt).
	terminal bool
	// stdoutTerminal reports whether stdout is a terminal (watch then
	// clears the screen between refreshes).
	stdoutTerminal bool
	// given are the flags the command line gave (not their defaults or
	// environment variables), by name.
	given map[string]bool
}

// exitError is an error with its exit code.
type exitError struct {
	code int
	err  error
	// printed: the command printed its errors itself.
	printed bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// printedErr is err, which the command already printed, with its exit
// code; nil when err is nil.
func printedErr(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: codeOf(err), err: err, printed: true}
}

// fail returns an error with exit code code, its message made as
// fmt.Errorf makes it.
func fail(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

// quiet drops go-redis's own log lines (a failed dial, say): the
// command reports each failure once, in its own words.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quiet{})
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// run runs the command line args and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	var c cli
	parser, err := kong.New(&c,
		kong.Name("warden"),
		kong.Description(description),
		kong.Writers(stdout, stderr),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
	if err != nil {
		fmt.Fprintf(stderr, "warden: %v\n", err)
		return exitFailed
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "%s (warden --help shows the usage)\n", oneLine(err))
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{cli: &c, stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv,
		terminal: isTerminal(stdin), stdoutTerminal: isTerminal(stdout), given: map[string]bool{}}
	for _, p := range kctx.Path {
		if p.Flag != nil {
			a.given[p.Flag.Name] = true
		}
	}
	kctx.BindTo(ctx, (*context.Context)(nil))
	err = kctx.Run(a)
	if err == nil {
		return exitOK
	}
	if ctx.Err() != nil {
		// Interrupted: whatever failed failed for that.
		fmt.Fprintln(stderr, "warden: interrupted")
		return exitInterrupted
	}
	if ee := (*exitError)(nil); !errors.As(err, &ee) || !ee.printed {
		fmt.Fprintf(stderr, "%s\n", oneLine(err))
	}
	return codeOf(err)
}

// codeOf maps an error to its exit code.
func codeOf(err error) int {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, client.ErrInvalidArgument):
		return exitUsage
	case errors.Is(err, client.ErrNoObject):
		return exitNotFound
	case errors.Is(err, client.ErrNotLockFamily):
		return exitNotLock
	case isNoPerm(err):
		return exitRefused
	}
	return exitFailed
}

// isNoPerm reports whether err is Redis refusing the user: a command, key
// or channel its ACL does not allow (NOPERM), or its credentials
// (WRONGPASS, NOAUTH).
func isNoPerm(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "NOPERM") || strings.Contains(s, "WRONGPASS") || strings.Contains(s, "NOAUTH")
}

// refusals gathers the names a scan could not read because Redis refused
// the user (NOPERM: a user whose ACL covers some names only, say), so
// that they make one line, not one line each.
type refusals struct {
	n     int
	first error
}

// note counts err if it is a refusal, and reports whether it was.
func (r *refusals) note(err error) bool {
	if !isNoPerm(err) {
		return false
	}
	r.n++
	if r.first == nil {
		r.first = err
	}
	return true
}

// err is the refusals as one error (nil for none), naming the glob
// scanned and the first refusal.
func (r *refusals) err(glob string) error {
	switch r.n {
	case 0:
		return nil
	case 1:
		return r.first
	}
	return fmt.Errorf("warden: %d names matching %q could not be read (Redis refused the user; its ACL covers other names?), the first: %w",
		r.n, glob, r.first)
}

// scan runs fn on every object whose name matches glob, as client.Scan
// finds them. A name that could not be read is printed as one line on
// stderr and the scan goes on; names Redis refused the user (its ACL) make
// one line at the end, after done has run. failed is the first of those
// errors, already printed (nil when there is none); err is fn's or done's
// error or ctx's end, which stop the scan.
func scan(ctx context.Context, a *app, rdb redis.UniversalClient, glob string, fn func(client.Object) error,
	done func()) (failed, err error) {
	var refused refusals
	for o, err := range client.Scan(ctx, rdb, glob) {
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err() // interrupted: run says so
			}
			if refused.note(err) {
				continue
			}
			fmt.Fprintln(a.stderr, oneLine(err))
			if failed == nil {
				failed = err
			}
			continue
		}
		if err := fn(o); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err() // interrupted, whether or not the scan said so
	}
	done()
	if err := refused.err(glob); err != nil {
		fmt.Fprintln(a.stderr, oneLine(err))
		if failed == nil {
			failed = err
		}
	}
	return failed, nil
}

// oneLine makes err's text one line starting with "warden: ".
func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	s = strings.ReplaceAll(strings.TrimPrefix(s, "warden: "), ": warden: ", ": ")
	if strings.Contains(s, "NOPERM") && !strings.Contains(s, "permission denied") {
		s = "permission denied: " + s
	}
	return "warden: " + s
}

// redactURL is u with its user information (user:password@) replaced,
// for an error message.
func redactURL(u string) string {
	at := strings.LastIndexByte(u, '@')
	if at < 0 {
		return u
	}
	start := 0
	if i := strings.Index(u, "://"); i >= 0 && i < at {
		start = i + len("://")
	}
	return u[:start] + "xxxxx" + u[at:]
}

// isTerminal reports whether f is a terminal. A character device is not
// enough: /dev/null is one, and is the input of a command run from cron
// or "ssh host warden ... </dev/null".
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(file.Fd()) || isatty.IsCygwinTerminal(file.Fd())
}

// connect opens the Redis the flags (or REDIS_URL) name and checks it
// answers. The caller closes it.
func (a *app) connect(ctx context.Context) (redis.UniversalClient, error) {
	c := a.cli
	var user, password, addr string
	db := 0
	var tls bool
	if u := a.getenv("REDIS_URL"); u != "" {
		o, err := redis.ParseURL(u)
		if err != nil {
			// The parser's error may quote the URL: not its password.
			msg := strings.ReplaceAll(err.Error(), u, redactURL(u))
			return nil, fail(exitUsage, "warden: REDIS_URL: %s (want redis://[user:password@]host:port[/db])", msg)
		}
		user, password, addr, db, tls = o.Username, o.Password, o.Addr, o.DB, o.TLSConfig != nil
	}
	if c.User != "" {
		user = c.User
	}
	if c.Password != "" {
		password = c.Password
	}
	if c.Addr != "" {
		addr = c.Addr
	}
	if addr == "" {
		addr = "localhost:6379"
	}
	if tls {
		return nil, fail(exitUsage, "warden: REDIS_URL: rediss (TLS) is not supported")
	}
	if len(c.Cluster) > 0 && len(c.Sentinel) > 0 {
		return nil, fail(exitUsage, "warden: --cluster and --sentinel exclude each other")
	}
	// --addr would be ignored: the nodes to ask are the cluster's or the
	// sentinels'.
	if c.Addr != "" && len(c.Cluster) > 0 {
		return nil, fail(exitUsage, "warden: --addr and --cluster exclude each other")
	}
	if c.Addr != "" && len(c.Sentinel) > 0 {
		return nil, fail(exitUsage, "warden: --addr and --sentinel exclude each other")
	}
	t := c.Timeout
	if t <= 0 {
		return nil, fail(exitUsage, "warden: --timeout must be positive")
	}
	var rdb redis.UniversalClient
	var where string
	switch {
	case len(c.Cluster) > 0:
		where = strings.Join(c.Cluster, ",")
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Cluster, Username: user, Password: password,
			DialTimeout: t, ReadTimeout: t, WriteTimeout: t, MaxRetries: 1})
	case len(c.Sentinel) > 0:
		where = strings.Join(c.Sentinel, ",")
		rdb = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: c.MasterName, SentinelAddrs: c.Sentinel,
			Username: user, Password: password, DB: db, DialTimeout: t, ReadTimeout: t, WriteTimeout: t, MaxRetries: 1})
	default:
		where = addr
		rdb = redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: password, DB: db,
			DialTimeout: t, ReadTimeout: t, WriteTimeout: t, MaxRetries: 1})
	}
	pctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		if isNoPerm(err) {
			return nil, fail(exitRefused, "warden: Redis at %s refused the user: %v", where, err)
		}
		return nil, fail(exitFailed, "warden: cannot reach Redis at %s: %v", where, err)
	}
	return rdb, nil
}
