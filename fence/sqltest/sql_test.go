package sqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/warden-go/warden/fence"
	"github.com/warden-go/warden/fence/sqltest/internal/pgtest"
	"github.com/warden-go/warden/internal/holdertest"
	"github.com/warden-go/warden/internal/redistest"
)

// store is a database the SQL guard runs on in these tests.
type store struct {
	driver  string
	dialect fence.Dialect
	// open returns a fresh database's DSN.
	open func(t testing.TB) string
	// serial is the type of an auto-incremented key.
	serial string
	// ph is the n-th placeholder.
	ph func(n int) string
	// tables lists the database's tables, by name.
	tables string
}

func stores() map[string]store {
	return map[string]store{
		"postgres": {driver: "pgx", dialect: fence.Postgres, serial: "BIGSERIAL PRIMARY KEY",
			open: func(t testing.TB) string { return pgtest.Start(t).DSN },
			ph:   func(n int) string { return fmt.Sprintf("$%d", n) },
			tables: "SELECT table_schema || '.' || table_name FROM information_schema.tables " +
				"WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"},
		"sqlite": {driver: "sqlite", dialect: fence.SQLite, serial: "INTEGER PRIMARY KEY AUTOINCREMENT",
			open: func(t testing.TB) string {
				return "file:" + filepath.Join(t.TempDir(), "test.db") +
					"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
			},
			ph:     func(int) string { return "?" },
			tables: "SELECT 'main.' || name FROM sqlite_master WHERE type = 'table' ORDER BY 1"},
	}
}

// each runs test on a fresh database of every store.
func each(t *testing.T, test func(t *testing.T, st store, dsn string, db *sql.DB)) {
	for _, name := range []string{"postgres", "sqlite"} {
		st := stores()[name]
		t.Run(name, func(t *testing.T) {
			dsn := st.open(t)
			db, err := sql.Open(st.driver, dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			test(t, st, dsn, db)
		})
	}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newGuard(db *sql.DB, st store) *fence.SQL { return fence.NewSQL(db, st.dialect) }

// setUpJob creates the fence table and the job's tables.
func setUpJob(t *testing.T, st store, db *sql.DB) {
	ctx := testCtx(t)
	require.NoError(t, newGuard(db, st).Migrate(ctx))
	for _, q := range []string{
		"CREATE TABLE job (id INTEGER PRIMARY KEY, status TEXT NOT NULL, by_holder TEXT NOT NULL, token BIGINT NOT NULL)",
		"CREATE TABLE job_rows (id " + st.serial + ", by_holder TEXT NOT NULL, token BIGINT NOT NULL)",
		"INSERT INTO job (id, status, by_holder, token) VALUES (1, 'pending', '', 0)",
	} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
}

// jobWrite is a holder's work on the job: mark it done and add its rows,
// in one fenced transaction.
func jobWrite(ctx context.Context, g *fence.SQL, token int64, holder string, rows int) error {
	st := stores()[g.Dialect().String()]
	return g.Do(ctx, token, "job", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("UPDATE job SET status = 'done', by_holder = %s, token = %s WHERE id = 1",
			st.ph(1), st.ph(2)), holder, token); err != nil {
			return err
		}
		for range rows {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO job_rows (by_holder, token) VALUES (%s, %s)",
				st.ph(1), st.ph(2)), holder, token); err != nil {
				return err
			}
		}
		return nil
	})
}

// jobState is what the job's tables hold.
func jobState(t *testing.T, db *sql.DB) (status, by string, token int64, rows []string) {
	ctx := testCtx(t)
	require.NoError(t, db.QueryRowContext(ctx, "SELECT status, by_holder, token FROM job WHERE id = 1").
		Scan(&status, &by, &token))
	r, err := db.QueryContext(ctx, "SELECT by_holder, token FROM job_rows ORDER BY id")
	require.NoError(t, err)
	defer func() { _ = r.Close() }()
	for r.Next() {
		var h string
		var tok int64
		require.NoError(t, r.Scan(&h, &tok))
		rows = append(rows, fmt.Sprintf("%s/%d", h, tok))
	}
	require.NoError(t, r.Err())
	return status, by, token, rows
}

func stale(t *testing.T, err error, resource string, token, highest int64) {
	t.Helper()
	require.ErrorIs(t, err, fence.ErrStaleToken)
	var se *fence.StaleTokenError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, fence.StaleTokenError{Resource: resource, Token: token, Highest: highest}, *se)
}

// Do refuses a token below the highest seen, rolls back and never calls
// fn then; equal and higher tokens run fn and commit; fn's error or panic
// rolls back.
func TestSQLGuard(t *testing.T) {
	each(t, func(t *testing.T, st store, _ string, db *sql.DB) {
		ctx := testCtx(t)
		setUpJob(t, st, db)
		g := newGuard(db, st)
		require.NoError(t, g.Migrate(ctx), "Migrate again changes nothing")
		require.NoError(t, jobWrite(ctx, g, 5, "five", 1))
		require.NoError(t, jobWrite(ctx, g, 5, "five again", 1), "an equal token")
		called := false
		err := g.Do(ctx, 4, "job", func(*sql.Tx) error { called = true; return nil })
		stale(t, err, "job", 4, 5)
		_, isStale := err.(*fence.StaleTokenError)
		assert.True(t, isStale, "the error is the *StaleTokenError itself, not a wrapping: %T", err)
		assert.False(t, called, "fn is not called for a stale token")
		stale(t, jobWrite(ctx, g, 3, "three", 1), "job", 3, 5)
		status, by, token, rows := jobState(t, db)
		assert.Equal(t, []any{"done", "five again", int64(5), []string{"five/5", "five again/5"}},
			[]any{status, by, token, rows})

		boom := errors.New("boom")
		err = g.Do(ctx, 9, "job", func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE job SET by_holder = 'rolled back'")
			require.NoError(t, err)
			return boom
		})
		require.Same(t, boom, err, "fn's error as it is")
		require.Panics(t, func() {
			_ = g.Do(ctx, 9, "job", func(tx *sql.Tx) error {
				_, _ = tx.ExecContext(ctx, "UPDATE job SET by_holder = 'rolled back'")
				panic("fn panicked")
			})
		})
		_, by, _, _ = jobState(t, db)
		assert.Equal(t, "five again", by, "fn's error and panic rolled back")
		require.NoError(t, jobWrite(ctx, g, 6, "six", 0), "the rolled back 9 raised nothing")
		require.NoError(t, g.Do(ctx, 1, "another resource", func(*sql.Tx) error { return nil }),
			"each resource has its own fence")

		var highest int64
		require.NoError(t, db.QueryRowContext(ctx, "SELECT token FROM warden_fence WHERE resource = 'job'").Scan(&highest))
		assert.Equal(t, int64(6), highest)

		custom := fence.NewSQL(db, st.dialect, fence.WithTable("My_Fence"))
		require.NoError(t, custom.Migrate(ctx))
		require.NoError(t, custom.Do(ctx, 2, "job", func(*sql.Tx) error { return nil }), "a table of its own")
		stale(t, custom.Do(ctx, 1, "job", func(*sql.Tx) error { return nil }), "job", 1, 2)
	})
}

// Bad input is refused with ErrInvalidArgument before anything is
// written: no table is created, no fence row raised, fn never runs.
func TestSQLGuardBadInput(t *testing.T) {
	each(t, func(t *testing.T, st store, _ string, db *sql.DB) {
		ctx := testCtx(t)
		g := newGuard(db, st)
		require.NoError(t, g.Migrate(ctx))
		_, err := db.ExecContext(ctx, "CREATE TABLE note (body TEXT NOT NULL)")
		require.NoError(t, err)
		ok := func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO note (body) VALUES ('fn ran')")
			return err
		}
		for name, err := range map[string]error{
			"nil db":             fence.NewSQL(nil, st.dialect).Migrate(ctx),
			"nil db, do":         fence.NewSQL(nil, st.dialect).Do(ctx, 1, "r", ok),
			"zero dialect":       fence.NewSQL(db, 0).Migrate(ctx),
			"unknown dialect":    fence.NewSQL(db, fence.Dialect(42)).Do(ctx, 1, "r", ok),
			"bad table":          fence.NewSQL(db, st.dialect, fence.WithTable("fence; DROP TABLE job")).Migrate(ctx),
			"digit table":        fence.NewSQL(db, st.dialect, fence.WithTable("1fence")).Migrate(ctx),
			"empty table":        fence.NewSQL(db, st.dialect, fence.WithTable("")).Migrate(ctx),
			"two dots":           fence.NewSQL(db, st.dialect, fence.WithTable("a.b.c")).Migrate(ctx),
			"nil option":         fence.NewSQL(db, st.dialect, nil).Migrate(ctx),
			"read-only tx":       fence.NewSQL(db, st.dialect, fence.WithTxOptions(&sql.TxOptions{ReadOnly: true})).Migrate(ctx),
			"zero token":         g.Do(ctx, 0, "r", ok),
			"negative token":     g.Do(ctx, -5, "r", ok),
			"empty resource":     g.Do(ctx, 1, "", ok),
			"long resource":      g.Do(ctx, 1, strings.Repeat("r", fence.MaxResourceLen+1), ok),
			"non-UTF-8 resource": g.Do(ctx, 1, "\xff", ok),
			"NUL in resource":    g.Do(ctx, 1, "a\x00b", ok),
			"nil fn":             g.Do(ctx, 1, "r", nil),
			"nil guard":          (*fence.SQL)(nil).Do(ctx, 1, "r", ok),
			"nil ctx":            g.Do(noCtx, 1, "r", ok),
		} {
			require.ErrorIs(t, err, fence.ErrInvalidArgument, name)
		}
		var tables []string
		r, err := db.QueryContext(ctx, st.tables)
		require.NoError(t, err)
		for r.Next() {
			var name string
			require.NoError(t, r.Scan(&name))
			tables = append(tables, name)
		}
		require.NoError(t, r.Close())
		schema := map[fence.Dialect]string{fence.Postgres: "public.", fence.SQLite: "main."}[st.dialect]
		assert.Equal(t, []string{schema + "note", schema + "warden_fence"}, tables, "no table was created")
		var rows, notes int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM warden_fence").Scan(&rows))
		require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM note").Scan(&notes))
		assert.Equal(t, []int{0, 0}, []int{rows, notes}, "no fence row was raised, fn never ran")
	})
}

// WithTable takes a schema-qualified name, WithTxOptions's options reach
// the transaction, and a context cancelled before or during Do commits
// nothing.
func TestSQLGuardOptionsAndContext(t *testing.T) {
	each(t, func(t *testing.T, st store, _ string, db *sql.DB) {
		ctx := testCtx(t)
		schema := "main" // SQLite's name for the database's own schema
		if st.dialect == fence.Postgres {
			schema = "app"
			_, err := db.ExecContext(ctx, "CREATE SCHEMA app")
			require.NoError(t, err)
		}
		table := schema + ".app_fence"
		g := fence.NewSQL(db, st.dialect, fence.WithTable(table),
			fence.WithTxOptions(&sql.TxOptions{Isolation: sql.LevelSerializable}))
		assert.Equal(t, table, g.Table())
		require.NoError(t, g.Migrate(ctx))
		_, err := db.ExecContext(ctx, "CREATE TABLE note (body TEXT NOT NULL)")
		require.NoError(t, err)
		require.NoError(t, g.Do(ctx, 4, "r", func(tx *sql.Tx) error {
			if st.dialect == fence.Postgres {
				var level string
				require.NoError(t, tx.QueryRowContext(ctx, "SHOW transaction_isolation").Scan(&level))
				assert.Equal(t, "serializable", level, "WithTxOptions's isolation level")
			}
			return nil
		}))
		highest := func() (n int64) {
			require.NoError(t, db.QueryRowContext(ctx, "SELECT token FROM "+table+" WHERE resource = 'r'").Scan(&n))
			return n
		}
		assert.Equal(t, int64(4), highest(), "the row is in the schema-qualified table")

		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		called := false
		err = g.Do(cancelled, 9, "r", func(*sql.Tx) error { called = true; return nil })
		require.ErrorIs(t, err, context.Canceled)
		assert.False(t, called, "fn is not called on a cancelled context")

		during, cancel := context.WithCancel(ctx)
		defer cancel()
		err = g.Do(during, 9, "r", func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(during, "INSERT INTO note (body) VALUES ('cancelled')"); err != nil {
				return err
			}
			cancel()
			// Let database/sql roll the transaction back before fn returns,
			// so Commit finds it done (it would otherwise say ctx's error).
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
				if _, err := tx.ExecContext(context.Background(), "SELECT 1"); errors.Is(err, sql.ErrTxDone) {
					break
				}
			}
			return nil
		})
		require.ErrorIs(t, err, context.Canceled, "a context cancelled in fn: no commit, and the context's error")
		var notes int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM note").Scan(&notes))
		assert.Zero(t, notes, "nothing of the cancelled transactions was committed")
		assert.Equal(t, int64(4), highest(), "the fence row was not raised by them")
	})
}

// A holder frozen (SIGSTOP) until its watchdog-renewed lease ran out,
// while the next holder takes the lock and writes, is refused when it
// wakes (SIGCONT) and writes: the next holder's work is all there. No
// step is timed: the paused holder writes when told, after the next
// holder's write.
func TestPausedHolderIsRefused(t *testing.T) {
	each(t, func(t *testing.T, st store, dsn string, db *sql.DB) {
		setUpJob(t, st, db)
		srv := redistest.Start(t)
		t.Setenv("FENCE_TEST_STORE", st.dialect.String())
		t.Setenv("FENCE_TEST_DSN", dsn)
		r := holdertest.Run(t, srv.Addr(), "job", watchdog, func(ctx context.Context, token int64) error {
			return jobWrite(ctx, newGuard(db, st), token, "the next holder", 3)
		})
		r.Log(t, st.dialect.String())
		assert.Greater(t, r.NextToken, r.PausedToken, "the next holder took the lock: the frozen holder's lease ran out")
		assert.False(t, r.StillHeld, "the resumed holder no longer holds the lock")
		assert.True(t, r.Wrote.After(r.Continued), "the stale write came after the resume")
		require.Equal(t, "stale", r.Outcome, "the paused holder's write: %s", r.Err)
		assert.Contains(t, r.Err, fmt.Sprintf("token %d, highest seen %d", r.PausedToken, r.NextToken))
		status, by, token, rows := jobState(t, db)
		next := fmt.Sprintf("the next holder/%d", r.NextToken)
		assert.Equal(t, []any{"done", "the next holder", r.NextToken, []string{next, next, next}},
			[]any{status, by, token, rows})
		t.Logf("%s: next holder's data afterwards: job %s by %q (token %d), rows %v", st.dialect, status, by, token, rows)
	})
}

// Writers with interleaved tokens, all at once: the transactions that
// commit (each appends its token to a log) never go down in token, the
// last is the highest token, and the value is the freshest writer's.
func TestInterleavedWriters(t *testing.T) {
	each(t, func(t *testing.T, st store, _ string, db *sql.DB) {
		ctx := testCtx(t)
		g := newGuard(db, st)
		require.NoError(t, g.Migrate(ctx))
		for _, q := range []string{
			"CREATE TABLE acct_log (id " + st.serial + ", token BIGINT NOT NULL)",
			"CREATE TABLE acct (id INTEGER PRIMARY KEY, token BIGINT NOT NULL)",
			"INSERT INTO acct (id, token) VALUES (1, 0)",
		} {
			_, err := db.ExecContext(ctx, q)
			require.NoError(t, err, q)
		}
		const writers, rounds = 6, 15
		var mu sync.Mutex
		var refused []int64
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for r := range rounds {
					tok := int64(w + 1 + r*writers)
					err := g.Do(ctx, tok, "acct", func(tx *sql.Tx) error {
						if _, err := tx.ExecContext(ctx, "INSERT INTO acct_log (token) VALUES ("+st.ph(1)+")", tok); err != nil {
							return err
						}
						_, err := tx.ExecContext(ctx, "UPDATE acct SET token = "+st.ph(1)+" WHERE id = 1", tok)
						return err
					})
					if errors.Is(err, fence.ErrStaleToken) {
						mu.Lock()
						refused = append(refused, tok)
						mu.Unlock()
						continue
					}
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
		rows, err := db.QueryContext(ctx, "SELECT token FROM acct_log ORDER BY id")
		require.NoError(t, err)
		var applied []int64
		for rows.Next() {
			var tok int64
			require.NoError(t, rows.Scan(&tok))
			applied = append(applied, tok)
		}
		require.NoError(t, rows.Close())
		total := writers * rounds
		assert.True(t, slices.IsSorted(applied), "the committed tokens never go down: %v", applied)
		assert.Equal(t, int64(total), slices.Max(applied))
		assert.Equal(t, total, len(applied)+len(refused))
		var value int64
		require.NoError(t, db.QueryRowContext(ctx, "SELECT token FROM acct WHERE id = 1").Scan(&value))
		assert.Equal(t, int64(total), value, "the freshest survives")
		t.Logf("%s: %d transactions with interleaved tokens from %d writers: %d committed, in token order, %d refused",
			st.dialect, total, writers, len(applied), len(refused))
	})
}

// watchdog is the paused holder's watchdog timeout: its lease runs out
// this long after it is frozen.
const watchdog = time.Second

// noCtx is a nil context, for the tests that pass one.
var noCtx context.Context
