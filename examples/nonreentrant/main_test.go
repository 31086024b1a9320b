package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/warden-go/warden/internal/exampleredis"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRuns(t *testing.T) {
	exampleredis.TestRun(t, run)
}
