package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/warden-go/warden/internal/redistest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunsOnItsOwnRedisServer(t *testing.T) {
	if err := run("", 200, 1); err != nil {
		t.Fatal(err)
	}
}

func TestRunsOnAGivenRedis(t *testing.T) {
	if err := run(redistest.Start(t).Addr(), 200, 2); err != nil {
		t.Fatal(err)
	}
}

func TestRejectsBadFlags(t *testing.T) {
	if err := run("", 0, 1); err == nil {
		t.Fatal("-pairs 0 accepted")
	}
}
