package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Dialect is the SQL of a database: Postgres, SQLite or MySQL.
type Dialect int

// The dialects. The zero Dialect is none of them.
const (
	// Postgres is PostgreSQL (9.5 and later): placeholders $1, $2; the
	// fence row is raised with INSERT ... ON CONFLICT ... DO UPDATE ...
	// WHERE.
	Postgres Dialect = iota + 1
	// SQLite (3.24 and later): placeholders ?; the same upsert as
	// Postgres.
	SQLite
	// MySQL (and MariaDB): placeholders ?; the fence row is raised with
	// INSERT ... ON DUPLICATE KEY UPDATE token = GREATEST(...), then read
	// back under its lock to learn whether the token was stale. The
	// package's tests run Postgres and SQLite on real databases, not
	// MySQL: this dialect is not tested by the suite.
	MySQL
)

// String names the dialect.
func (d Dialect) String() string {
	switch d {
	case Postgres:
		return "postgres"
	case SQLite:
		return "sqlite"
	case MySQL:
		return "mysql"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// MaxResourceLen is the longest SQL resource name accepted, in bytes (the
// fence table's key is a VARCHAR(255) on MySQL).
const MaxResourceLen = 255

// DefaultTable is the fence table's name unless WithTable says otherwise.
const DefaultTable = "warden_fence"

// SQLOption configures a SQL guard.
type SQLOption func(*sqlConfig) error

type sqlConfig struct {
	table  string
	txOpts *sql.TxOptions
}

// identifier is a table name the guard accepts, unquoted.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// WithTable names the fence table: an identifier (letters, digits and
// underscores, not starting with a digit, at most 63 bytes), or one
// qualified with a schema ("app.fence"). The guard quotes it, so its case
// is kept. The default is "warden_fence".
func WithTable(name string) SQLOption {
	return func(c *sqlConfig) error {
		parts := strings.Split(name, ".")
		if len(parts) > 2 {
			return invalid("table", "%q: at most one schema qualifier", name)
		}
		for _, p := range parts {
			if !identifier.MatchString(p) {
				return invalid("table", "%q: want an identifier (letters, digits, '_'; not starting with a digit; "+
					"at most 63 bytes), optionally qualified with a schema", name)
			}
		}
		c.table = name
		return nil
	}
}

// WithTxOptions sets the options of Do's transactions (isolation level,
// read-only is refused: the guard writes). The default is nil: the
// driver's default isolation level.
func WithTxOptions(opts *sql.TxOptions) SQLOption {
	return func(c *sqlConfig) error {
		if opts != nil && opts.ReadOnly {
			return invalid("tx options", "read-only: the guard writes its token")
		}
		c.txOpts = opts
		return nil
	}
}

// SQL is the guard for resources kept in a SQL database: Do runs the
// caller's function in a transaction that first raises the resource's row
// of the fence table to the token, and rolls back, with ErrStaleToken,
// when the row has seen a higher token. The row stays locked until the
// transaction ends, so the calls of Do on one resource run one after the
// other, and a stale holder's Do that waited for a fresher one's is
// refused when it gets the row.
//
// On SQLite the lock is the whole database's: a Do serializes with every
// other writing transaction, on any resource. With a plain DSN a Do that
// finds the database locked fails at once with SQLITE_BUSY; open the
// database with a busy timeout and immediate transactions (with
// modernc.org/sqlite: "file:app.db?_pragma=busy_timeout(5000)&_txlock=immediate")
// so that it waits for the lock instead.
//
// Migrate creates the fence table; nothing creates it implicitly.
//
// A SQL is safe for concurrent use.
type SQL struct {
	db  *sql.DB
	d   Dialect
	cfg sqlConfig
	// err is the first bad argument of NewSQL, returned by every call.
	err error
}

// NewSQL returns the SQL guard on db, a database of dialect d. A nil db,
// an unknown dialect or a bad option makes every call fail with
// ErrInvalidArgument; the package imports no driver (the caller's program
// registers its own).
func NewSQL(db *sql.DB, d Dialect, opts ...SQLOption) *SQL {
	s := &SQL{db: db, d: d, cfg: sqlConfig{table: DefaultTable}}
	switch {
	case db == nil:
		s.err = invalid("db", "nil")
	case d != Postgres && d != SQLite && d != MySQL:
		s.err = invalid("dialect", "%v is none of Postgres, SQLite, MySQL", d)
	}
	for _, opt := range opts {
		if s.err != nil {
			break
		}
		if opt == nil {
			s.err = invalid("option", "nil")
			break
		}
		s.err = opt(&s.cfg)
	}
	return s
}

// check returns the guard's bad argument, if any.
func (s *SQL) check() error {
	if s == nil {
		return invalid("sql guard", "nil")
	}
	return s.err
}

// Table returns the fence table's name.
func (s *SQL) Table() string {
	if s == nil {
		return ""
	}
	return s.cfg.table
}

// Migrate creates the fence table if it does not exist: a row per
// resource, its highest token seen.
func (s *SQL) Migrate(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	if ctx == nil {
		return invalid("ctx", "nil")
	}
	if _, err := s.db.ExecContext(ctx, s.statements().create); err != nil {
		return fmt.Errorf("warden: fence: create table %s: %w", s.cfg.table, err)
	}
	return nil
}

// Do runs fn in a transaction that first raises resource's fence row to
// token: when the row has seen a higher token, Do rolls back without
// calling fn and returns a *StaleTokenError (ErrStaleToken). Else fn runs
// with the transaction, which commits when fn returns nil and rolls back
// when it returns an error (Do returns that error as it is, joined with
// the rollback's error only if the rollback failed) or panics (the panic
// goes on after the rollback). Make every read the write depends on
// inside fn. fn must not commit or roll back the transaction itself: Do
// ends it.
//
// Do does not retry: a serialization failure or a deadlock, from the
// raise or from fn, comes back as Do's error, and the transaction was
// rolled back. Retry with the same token; a retry that finds a higher
// token is refused.
func (s *SQL) Do(ctx context.Context, token int64, resource string, fn func(*sql.Tx) error) error {
	if err := s.check(); err != nil {
		return err
	}
	switch {
	case ctx == nil:
		return invalid("ctx", "nil")
	case fn == nil:
		return invalid("fn", "nil")
	}
	if err := validToken(token); err != nil {
		return err
	}
	if err := validResource(resource); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, s.cfg.txOpts)
	if err != nil {
		return fmt.Errorf("warden: fence: %s: begin: %w", resource, err)
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback() // fn panicked
		}
	}()
	if err := s.raise(ctx, tx, token, resource); err != nil {
		done = true
		return rollback(tx, err)
	}
	if err := fn(tx); err != nil {
		done = true
		return rollback(tx, err)
	}
	done = true
	if err := tx.Commit(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// The context ended while fn ran: database/sql rolled the
			// transaction back, and Commit may say only that it is done.
			return fmt.Errorf("warden: fence: %s: not committed, rolled back: %w", resource, cerr)
		}
		return fmt.Errorf("warden: fence: %s: commit: %w", resource, err)
	}
	return nil
}

// rollback rolls tx back after err, and returns err as it is, or joined
// with the rollback's error when the rollback failed (one already ended,
// by fn or the context, is no failure).
func rollback(tx *sql.Tx, err error) error {
	if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
		return errors.Join(err, fmt.Errorf("warden: fence: rollback: %w", rerr))
	}
	return err
}

// raise raises resource's fence row to token in tx, or reports the
// highest token seen.
func (s *SQL) raise(ctx context.Context, tx *sql.Tx, token int64, resource string) error {
	st := s.statements()
	res, err := tx.ExecContext(ctx, st.raise, resource, token)
	if err != nil {
		return fmt.Errorf("warden: fence: %s: raise: %w", resource, err)
	}
	if s.d != MySQL {
		// The upsert changes no row only when its WHERE refused the token.
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("warden: fence: %s: rows affected: %w", resource, err)
		}
		if n > 0 {
			return nil
		}
	}
	// MySQL's upsert leaves an equal token unchanged as it leaves a stale
	// one: the row, locked now, tells them apart.
	var highest int64
	if err := tx.QueryRowContext(ctx, st.read, resource).Scan(&highest); err != nil {
		return fmt.Errorf("warden: fence: %s: read: %w", resource, err)
	}
	if err := Admit(resource, token, highest); err != nil {
		return err
	}
	if s.d != MySQL || highest != token {
		return fmt.Errorf("warden: fence: %s: the fence row holds %d after raising it to %d", resource, highest, token)
	}
	return nil
}

// validResource checks a SQL resource name.
func validResource(resource string) error {
	switch {
	case resource == "":
		return invalid("resource", "empty")
	case len(resource) > MaxResourceLen:
		return invalid("resource", "%d bytes, more than %d", len(resource), MaxResourceLen)
	case !utf8.ValidString(resource):
		return invalid("resource", "%q is not UTF-8", resource)
	case strings.IndexByte(resource, 0) >= 0:
		return invalid("resource", "%q holds a NUL byte", resource)
	}
	return nil
}

// sqlStatements are a dialect's statements on the fence table.
type sqlStatements struct {
	create, raise, read string
}

// statements returns the guard's statements, its table quoted.
func (s *SQL) statements() sqlStatements {
	q := `"`
	if s.d == MySQL {
		q = "`"
	}
	parts := strings.Split(s.cfg.table, ".")
	for i, p := range parts {
		parts[i] = q + p + q
	}
	t := strings.Join(parts, ".")
	switch s.d {
	case Postgres:
		return sqlStatements{
			create: "CREATE TABLE IF NOT EXISTS " + t + " (resource TEXT PRIMARY KEY, token BIGINT NOT NULL)",
			raise: "INSERT INTO " + t + " AS f (resource, token) VALUES ($1, $2) " +
				"ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token WHERE f.token <= EXCLUDED.token",
			read: "SELECT token FROM " + t + " WHERE resource = $1",
		}
	case SQLite:
		return sqlStatements{
			create: "CREATE TABLE IF NOT EXISTS " + t + " (resource TEXT NOT NULL PRIMARY KEY, token INTEGER NOT NULL)",
			raise: "INSERT INTO " + t + " AS f (resource, token) VALUES (?, ?) " +
				"ON CONFLICT (resource) DO UPDATE SET token = excluded.token WHERE f.token <= excluded.token",
			read: "SELECT token FROM " + t + " WHERE resource = ?",
		}
	default:
		return sqlStatements{
			create: "CREATE TABLE IF NOT EXISTS " + t + " (resource VARCHAR(255) CHARACTER SET utf8mb4 " +
				"COLLATE utf8mb4_bin NOT NULL PRIMARY KEY, token BIGINT NOT NULL)",
			raise: "INSERT INTO " + t + " (resource, token) VALUES (?, ?) " +
				"ON DUPLICATE KEY UPDATE token = GREATEST(token, VALUES(token))",
			read: "SELECT token FROM " + t + " WHERE resource = ? FOR UPDATE",
		}
	}
}

// Dialect returns the guard's dialect.
func (s *SQL) Dialect() Dialect {
	if s == nil {
		return 0
	}
	return s.d
}
