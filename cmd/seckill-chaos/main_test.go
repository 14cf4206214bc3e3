package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestBadScheduleIsAUsageErrorNotARun(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-schedule", "nuke@1s"}, &out, &errOut); code != 2 {
		t.Fatalf("exit code %d, want 2 (stderr %q)", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "unknown kind") {
		t.Fatalf("stderr %q does not say what is wrong", errOut.String())
	}
}
