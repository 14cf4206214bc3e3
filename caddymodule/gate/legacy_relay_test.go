package gate

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/seckilledge/seckill/caddymodule/relay"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// The gate script creates the outbox group the relay reads: both must name the same one.
func TestTheRelayReadsTheGroupTheGateWrites(t *testing.T) {
	if RelayGroup != relay.Group {
		t.Fatalf("gate writes group %q, relay reads %q", RelayGroup, relay.Group)
	}
}

// An old Caddyfile with `relay` inside seckill_gate still adapts (testdata/adapt/full.caddyfile
// holds its JSON), and the adapter warns that the block moved to the seckill global option.
func TestTheDeprecatedGateRelayBlockAdaptsWithAWarning(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	prev := adaptLog
	adaptLog = func() *zap.Logger { return zap.New(core) }
	t.Cleanup(func() { adaptLog = prev })

	in := ":80 {\n seckill_gate {\n relay {\n batch_size 64\n }\n }\n}"
	out, _, err := caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}.Adapt([]byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"relay":{"batch_size":64}`; !strings.Contains(string(out), want) {
		t.Errorf("adapted JSON %s lacks %s", out, want)
	}
	if logs.FilterMessageSnippet("deprecated").Len() != 1 {
		t.Errorf("want one deprecation warning, got %v", logs.All())
	}

	// The same handler without the block: no warning.
	logs.TakeAll()
	if _, _, err := (caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}).Adapt([]byte(":80 {\n seckill_gate\n}"), nil); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Errorf("unexpected warnings: %v", logs.All())
	}
}
