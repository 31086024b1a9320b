package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/warden-go/warden/internal/exampleredis"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// wantSeries are series a scrape of a running monitor shows.
var wantSeries = []string{
	`warden_lock_held{`,
	`warden_kind="lock"`,
	`warden_lock_held_age_max_seconds{`,
	`warden_lock_acquire_duration_seconds_count{`,
	`warden_outcome="acquired"`,
	`warden_outcome="timeout"`,
	`warden_lock_hold_duration_seconds_count{`,
	`warden_end="released"`,
	`warden_lock_waiting{`,
	`warden_kind="semaphore"`,
	`warden_renewal_duration_seconds_count{`,
}

// The monitor serves warden's metrics on /metrics while it runs, and stops
// when its time is up.
func TestServesMetrics(t *testing.T) {
	exampleredis.TestRun(t, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		scraped := make(chan string, 1)
		err := run(ctx, "127.0.0.1:0", func(addr string) {
			go func() { scraped <- scrapeUntil(ctx, cancel, "http://"+addr+"/metrics") }()
		})
		body := <-scraped
		if err != nil {
			return err
		}
		for _, s := range wantSeries {
			if !strings.Contains(body, s) {
				t.Errorf("no %s in the scrape:\n%s", s, body)
			}
		}
		return nil
	})
}

// scrapeUntil fetches url every 100 ms until the body shows every series
// of wantSeries, then ends the run (cancel) and returns the body; or
// returns the last body when ctx ends first.
func scrapeUntil(ctx context.Context, cancel context.CancelFunc, url string) string {
	var last string
	for ctx.Err() == nil {
		if body, err := get(ctx, url); err == nil {
			last = body
			all := true
			for _, s := range wantSeries {
				all = all && strings.Contains(body, s)
			}
			if all {
				cancel()
				return body
			}
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return last
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
