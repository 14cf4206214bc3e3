//go:build integration

package crowd_test

import (
	"context"
	"os"
	"testing"

	"github.com/seckilledge/seckill/bench/driver"
	"github.com/seckilledge/seckill/internal/harness"
	"github.com/seckilledge/seckill/internal/testenv"
)

// startWholeStack builds this repository's gateway and backend and starts them (gateways
// gateways) on a Redis of the test's own and the stack's RabbitMQ and Postgres, until the test
// ends. A Redis of its own: on the shared one, other tests' gateways would relay this test's
// outboxes into their own vhosts (relays discover every preheated sale).
func startWholeStack(ctx context.Context, t *testing.T, gateways int) *driver.Stack {
	t.Helper()
	_ = testenv.Postgres(t) // fails clearly when the stack is down
	redisSrv := testenv.StartRedis(t)
	bin, err := binaries.Dir("../../..")
	if err != nil {
		t.Fatal(err)
	}
	stack, err := driver.Start(ctx, driver.StartOptions{Root: "../../..", BinDir: bin, RedisAddr: redisSrv.Addr(),
		AMQPURL: testenv.AMQPURL(), MgmtURL: testenv.AMQPMgmtURL(), PGAdminURL: testenv.PGAdminURL(),
		AdminToken: "e2e-admin-token-0123456789-abcdefgh", TokenKey: "e2e-token-key-0123456789abcdef-0123456789", LogDir: t.TempDir(),
		ExtraGlobal: harness.TrustLoopbackProxy, Gateways: gateways})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Close)
	return stack
}

// binaries are the gateway and backend, built once for the package's whole-stack tests.
var binaries harness.Binaries

func TestMain(m *testing.M) { os.Exit(binaries.Run(m)) }
