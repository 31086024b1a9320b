package sqltest_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/warden-go/warden/fence"
)

// BenchmarkFencedDo measures a fenced Do against a plain transaction
// with the same work (one UPDATE), on each store in the same run:
// alternating blocks, medians per transaction and their ratio.
func BenchmarkFencedDo(b *testing.B) {
	for _, name := range []string{"postgres", "sqlite"} {
		st := stores()[name]
		b.Run(name, func(b *testing.B) {
			dsn := st.open(b)
			db, err := sql.Open(st.driver, dsn)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			g := fence.NewSQL(db, st.dialect)
			if err := g.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			for _, q := range []string{"CREATE TABLE acct (id INTEGER PRIMARY KEY, n BIGINT NOT NULL)",
				"INSERT INTO acct (id, n) VALUES (1, 0)"} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			work := func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, "UPDATE acct SET n = n + 1 WHERE id = 1")
				return err
			}
			const txs = 50
			plain := func() time.Duration {
				start := time.Now()
				for range txs {
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					if err := work(tx); err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
				return time.Since(start)
			}
			fenced := func() time.Duration {
				start := time.Now()
				for range txs {
					if err := g.Do(ctx, 3, "acct", work); err != nil {
						b.Fatal(err)
					}
				}
				return time.Since(start)
			}
			plain()
			fenced()
			var ps, fs []time.Duration
			b.ResetTimer()
			for i := range b.N {
				if i%2 == 0 {
					ps, fs = append(ps, plain()), append(fs, fenced())
				} else {
					fs, ps = append(fs, fenced()), append(ps, plain())
				}
			}
			b.StopTimer()
			median := func(ds []time.Duration) float64 {
				slices.Sort(ds)
				return float64(ds[len(ds)/2]) / txs
			}
			mp, mf := median(ps), median(fs)
			b.ReportMetric(mp, "ns/plain-tx")
			b.ReportMetric(mf, "ns/fenced-do")
			b.ReportMetric(mf/mp, "fenced/plain")
		})
	}
}
