package sqltest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, pure Go

	"github.com/warden-go/warden/fence"
)

// The SQL guard on SQLite: the holder with token 8 has written; the
// holder with token 7, late, is refused and its function never runs.
func ExampleSQL_Do() {
	dir, err := os.MkdirTemp("", "fence-example-")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?_pragma=busy_timeout(5000)&_txlock=immediate")
	if err != nil {
		panic(err)
	}
	defer func() { _ = db.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE TABLE invoice (id INTEGER PRIMARY KEY, status TEXT)"); err != nil {
		panic(err)
	}
	guard := fence.NewSQL(db, fence.SQLite)
	if err := guard.Migrate(ctx); err != nil {
		panic(err)
	}
	send := func(token int64, status string) error {
		return guard.Do(ctx, token, "invoice:42", func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO invoice (id, status) VALUES (42, ?) "+
				"ON CONFLICT (id) DO UPDATE SET status = excluded.status", status)
			return err
		})
	}
	fmt.Println(send(8, "sent by the holder with token 8"))
	err = send(7, "sent again by the late holder")
	fmt.Println(errors.Is(err, fence.ErrStaleToken), err)
	var status string
	if err := db.QueryRowContext(ctx, "SELECT status FROM invoice WHERE id = 42").Scan(&status); err != nil {
		panic(err)
	}
	fmt.Println(status)
	// Output:
	// <nil>
	// true warden: stale fencing token: resource "invoice:42": token 7, highest seen 8
	// sent by the holder with token 8
}
