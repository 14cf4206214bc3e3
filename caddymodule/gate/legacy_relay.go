package gate

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/seckilledge/seckill/caddymodule/relay"
	"go.uber.org/zap"
)

// RelayConfig is the relay's configuration, which moved to the seckill app (relay.Config).
// It remains for the deprecated `relay` block of seckill_gate.
type RelayConfig = relay.Config

// adaptLog is where the Caddyfile adapter's deprecation warnings go (tests replace it).
var adaptLog = func() *zap.Logger { return caddy.Log().Named("caddyfile") }

// deprecatedRelayBlock warns, while adapting, that seckill_gate's `relay` block moved to the
// `seckill` global option. The block still adapts (to the handler's "relay" JSON field, which
// the app honours when it has no relay settings of its own).
func deprecatedRelayBlock(d *caddyfile.Dispenser) {
	adaptLog().Warn("seckill_gate: the relay block is deprecated; move it to the seckill global option: { seckill { relay { ... } } }",
		zap.String("file", d.File()), zap.Int("line", d.Line()))
}
