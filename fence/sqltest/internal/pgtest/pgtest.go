// Package pgtest starts a throwaway PostgreSQL server for tests: initdb
// in a temporary data directory, then postgres on a free 127.0.0.1 port
// with its unix socket in that directory, stopped (and the directory
// removed) when the test finishes.
//
// The server runs as a user that is not root: as the current user, or,
// when the tests run as root, as the "postgres" user the Debian package
// creates (PostgreSQL refuses to run as root).
//
// A missing PostgreSQL fails the test with the command that installs it;
// it never skips.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
)

// install is the command that installs PostgreSQL.
const install = "sudo apt-get install -y postgresql (or make deps)"

// Server is a running PostgreSQL server.
type Server struct {
	// DSN is the connection string of its "postgres" database, as the
	// "postgres" superuser, over TCP on 127.0.0.1.
	DSN  string
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan error
}

// Start starts a server and waits until it accepts connections; it is
// stopped when t finishes.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		t.Fatalf("pgtest: %v: install it with: %s", err, install)
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cred, err := credential(dir)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	logFile, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=50")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("pgtest: start postgres: %v", err)
	}
	s := &Server{DSN: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), Port: port,
		dir: dir, cmd: cmd, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() { s.stop(t) })
	if err := s.ready(15 * time.Second); err != nil {
		t.Fatalf("pgtest: %v\n%s", err, s.log())
	}
	return s
}

// DB opens a connection pool on the server, closed when t finishes.
func (s *Server) DB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", s.DSN)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// ready waits until the server answers a ping, or it exits, or d passes.
func (s *Server) ready(d time.Duration) error {
	db, err := sql.Open("pgx", s.DSN)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case werr := <-s.done:
			s.done <- werr
			return fmt.Errorf("postgres exited: %v", werr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after %v: %w", d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop shuts the server down (SIGINT: fast shutdown), killing it after
// ten seconds.
func (s *Server) stop(t testing.TB) {
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		t.Logf("pgtest: postgres killed after it did not stop in 10s\n%s", s.log())
	}
}

func (s *Server) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
	return string(b)
}

// binDir finds PostgreSQL's programs: the newest
// /usr/lib/postgresql/<version>/bin (the Debian layout), or else the
// directory of initdb on PATH.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL not found (no /usr/lib/postgresql/*/bin/initdb, no initdb on PATH)")
}

// credential is the user the server runs as: nil (the current user)
// unless that is root, then "postgres", who is given dir.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and no postgres user to run the server as (%v): install it with: %s",
			err, install)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort returns a TCP port free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
