package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/gate/core"
	"github.com/seckilledge/seckill/internal/testenv"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/seckilledge/seckill/caddymodule/relay"
	"github.com/seckilledge/seckill/internal/handlertest"
)

// preheat.lua creates the outbox group the relay reads (TestGateAcceptWritesStockBuyerOutboxAndExpiries
// checks it is core.RelayGroup): both must name the same one.
func TestTheRelayReadsTheGroupTheGateWrites(t *testing.T) {
	if core.RelayGroup != relay.Group {
		t.Fatalf("gate writes group %q, relay reads %q", core.RelayGroup, relay.Group)
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
	out, _, err := handlertest.Adapt([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, out)
	if want := `"relay":{"batch_size":64}`; !strings.Contains(compact.String(), want) {
		t.Errorf("adapted JSON %s lacks %s", compact.Bytes(), want)
	}
	if logs.FilterMessageSnippet("deprecated").Len() != 1 {
		t.Errorf("want one deprecation warning, got %v", logs.All())
	}

	// The same handler without the block: no warning.
	logs.TakeAll()
	if _, _, err := handlertest.Adapt([]byte(":80 {\n seckill_gate\n}")); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Errorf("unexpected warnings: %v", logs.All())
	}
}

// A JSON config from before the move, with the relay settings on the handler and none on the
// app, still loads, and the app applies the handler's settings: disabled runs no relay, any
// other block runs one (in the app's namespace).
func TestTheAppHonoursAGateRelayBlockWhenItHasNone(t *testing.T) {
	for _, disabled := range []bool{true, false} {
		t.Run(fmt.Sprintf("disabled=%v", disabled), func(t *testing.T) {
			c := newGatewayConfig(t, testenv.RabbitVhost(t))
			var cfg map[string]any
			if err := json.Unmarshal(c.JSON(), &cfg); err != nil {
				t.Fatal(err)
			}
			app := cfg["apps"].(map[string]any)["seckill"].(map[string]any)
			delete(app, "relay")
			routes := cfg["apps"].(map[string]any)["http"].(map[string]any)["servers"].(map[string]any)["gw"].(map[string]any)["routes"].([]any)
			gate := routes[0].(map[string]any)["handle"].([]any)[0].(map[string]any)
			gate["relay"] = map[string]any{"disabled": disabled, "poll_interval": "20ms"}
			raw, _ := json.Marshal(cfg)

			handlertest.StartCaddy(t, raw, fmt.Sprintf("http://127.0.0.1:%d", c.Port))
			var status struct {
				Handlers map[string]json.RawMessage `json:"handlers"`
			}
			testenv.WaitFor(t, 10*time.Second, "the status page", func() bool {
				resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/seckill/status", c.AdminPort))
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&status) == nil
			})

			rs, running := status.Handlers["relay"]
			if running == disabled {
				t.Errorf("handler relay block disabled=%v: relay running=%v (status %s)", disabled, running, rs)
			}
			if running && !strings.Contains(string(rs), testNamespace) {
				t.Errorf("the relay does not run in the app's namespace: %s", rs)
			}
		})
	}
}
