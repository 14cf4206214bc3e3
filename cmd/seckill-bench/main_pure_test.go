package main

import (
	"bytes"
	"context"
	"testing"
)

func TestBenchRefusesUnknownContestants(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-only", "redis-magic"}, &out, &errb); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
}
