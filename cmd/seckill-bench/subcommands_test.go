package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Every entry of the subcommand table reaches its own subcommand: an unknown flag is a usage
// error (2) whose usage names that subcommand, not another one's or the comparison's.
func TestEverySubcommandParsesItsOwnFlags(t *testing.T) {
	want := []string{"verify", "verify-room", "verify-draw", "verify-report", "room", "draw", "draw-sale", "identity", "soak", "session-standin"}
	if len(subcommands) != len(want) {
		t.Errorf("%d subcommands, want %d (%v)", len(subcommands), len(want), want)
	}
	for _, name := range want {
		if _, ok := subcommands[name]; !ok {
			t.Errorf("no subcommand %q", name)
			continue
		}
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{name, "-no-such-flag"}, &out, &errOut); code != 2 {
			t.Errorf("%s -no-such-flag: exit %d, want 2", name, code)
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(errOut.String(), "flag provided but not defined: -no-such-flag\n"), "\n")
		if first != "Usage of "+name+":" && first != "Usage of seckill-bench "+name+":" {
			t.Errorf("%s -no-such-flag: usage %q is not %s's", name, first, name)
		}
	}
}

// Any other first argument is a flag of the comparison.
func TestAFlagFirstRunsTheComparison(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-no-such-flag"}, &out, &errOut); code != 2 {
		t.Errorf("-no-such-flag: exit %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), "-only") {
		t.Errorf("-no-such-flag: usage %q is not the comparison's (no -only flag)", errOut.String())
	}
}
