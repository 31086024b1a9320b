package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/warden-go/warden/internal/redistest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunsOnEmbeddedRedis(t *testing.T) {
	t.Setenv("REDIS_ADDR", "")
	if err := run(); err != nil {
		t.Fatal(err)
	}
}

func TestRunsOnRedisServer(t *testing.T) {
	t.Setenv("REDIS_ADDR", redistest.Start(t).Addr())
	if err := run(); err != nil {
		t.Fatal(err)
	}
}
