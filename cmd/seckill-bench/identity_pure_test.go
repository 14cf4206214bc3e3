package main

import (
	"bytes"
	"context"
	"testing"
)

func TestIdentityRefusesUnknownCases(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"identity", "-cases", "demo,oauth-magic"}, &out, &errb); code != 2 {
		t.Fatalf("exit code %d, want 2\n%s", code, errb.String())
	}
}
