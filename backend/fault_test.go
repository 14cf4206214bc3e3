//go:build integration

package backend

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/backendtest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// These tests break a service in the middle of a run and check the promise the backend makes:
// afterwards every message is exactly one order (created or failed), none lost, none twice.
// They stay serial (no t.Parallel): each kills a server or a backend process, and each proves
// something only when the fault lands mid-stream ("finished before ... went down: the test
// proved nothing"), which depends on how fast the consumer runs; other tests running beside
// them would change that pace.

const faultMessages = 6000

// softAccounted counts a sale's orders, or -1 while the database does not answer.
func (e *env) softAccounted(sale string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var n int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE sale_id = $1`, sale).Scan(&n); err != nil {
		return -1
	}
	return n
}

// child starts this test binary as a backend process (see TestMain), with extra environment.
func (e *env) child(batch int, extra ...string) *exec.Cmd {
	e.t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SECKILL_BACKEND_CHILD=1", "SECKILL_PG_URL="+e.pg, "SECKILL_AMQP_URL="+e.amqp,
		"SECKILL_REDIS_ADDR="+testenv.RedisAddr(), "SECKILL_ADMIN_TOKEN=child-admin-token-0123456789-abcdef",
		"SECKILL_BACKEND_LISTEN=127.0.0.1:"+strconv.Itoa(testenv.FreePort(e.t)),
		"SECKILL_BACKEND_ADMIN_LISTEN=127.0.0.1:"+strconv.Itoa(testenv.FreePort(e.t)), "SECKILL_BATCH_SIZE="+strconv.Itoa(batch),
		"SECKILL_BATCH_WAIT=5ms")
	cmd.Env = append(cmd.Env, extra...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// runUntilFault waits until part of the messages are written, then calls fault; it fails the
// test when the fault came too late to hit a run in progress.
func (e *env) runUntilFault(sale string, fault func()) {
	e.t.Helper()
	testenv.WaitFor(e.t, 40*time.Second, "the first orders", func() bool { return e.softAccounted(sale) >= faultMessages/10 })
	fault()
}

func TestKillNineMidBatchLosesNoOrderAndWritesNoneTwice(t *testing.T) {
	e := newEnv(t)
	sale := e.sale(faultMessages)
	msgs := e.accept(sale, faultMessages)
	publish(t, e.amqp, sale, bodies(msgs))

	first := e.child(50)
	var atKill int
	e.runUntilFault(sale, func() {
		_ = first.Process.Signal(syscall.SIGKILL)
		_ = first.Wait()
		atKill = e.softAccounted(sale)
	})
	if atKill >= faultMessages {
		t.Fatalf("the consumer finished before it was killed (%d orders): the test proved nothing", atKill)
	}
	second := e.child(50)
	testenv.WaitFor(t, 50*time.Second, "every message accounted after the restart", func() bool {
		return e.softAccounted(sale) == faultMessages
	})
	_ = second.Process.Signal(syscall.SIGTERM)
	_ = second.Wait()
	e.checkExactlyOnce(sale, msgs, faultMessages)
	if n := queueDepth(t, e.amqp, contract.Queue); n != 0 {
		t.Fatalf("%d messages left in the queue", n)
	}
	t.Logf("killed with %d of %d written", atKill, faultMessages)
}

func TestConsumerRidesOutAPostgresRestart(t *testing.T) {
	pg := testenv.StartPostgres(t)
	e := newEnvOn(t, pg.URL(), testenv.RabbitVhost(t))
	sale := e.sale(faultMessages)
	msgs := e.accept(sale, faultMessages)
	publish(t, e.amqp, sale, bodies(msgs))
	e.startConsumer(25)
	var atStop int
	e.runUntilFault(sale, func() {
		pg.Kill()
		time.Sleep(time.Second) // the database stays down a while: the consumer must hold and retry
		pg.Start()
		atStop = e.softAccounted(sale)
	})
	if atStop >= faultMessages {
		t.Fatalf("the consumer finished before Postgres went down: the test proved nothing")
	}
	testenv.WaitFor(t, 50*time.Second, "every message accounted after the restart", func() bool {
		return e.softAccounted(sale) == faultMessages
	})
	e.checkExactlyOnce(sale, msgs, faultMessages)
	testenv.WaitFor(t, 10*time.Second, "the queue drained", func() bool { return queueDepth(t, e.amqp, contract.Queue) == 0 })
}

func TestConsumerRidesOutARabbitMQRestart(t *testing.T) {
	rb := testenv.StartRabbit(t)
	e := newEnvOn(t, backendtest.MigratedURL(t), rb.AMQPURL())
	sale := e.sale(faultMessages)
	msgs := e.accept(sale, faultMessages)
	publish(t, e.amqp, sale, bodies(msgs))
	// Small batches: one transaction per 5 orders keeps the consumer busy for seconds, so the
	// broker goes down with most of the messages still to write.
	e.startConsumer(5)
	var atFault, atStop int
	e.runUntilFault(sale, func() {
		t0 := time.Now()
		// A broker restart, as in a rolling upgrade: the consumer's connection dies mid-batch
		// either way. (kill -9 of a single-node broker is left to the chaos suite: the quorum
		// queue's recovery after it sometimes took more than 50 s here.) The count is read as
		// the stop begins: a clean stop takes seconds, and what the consumer writes while the
		// broker closes its connections says nothing about whether the fault hit mid-stream.
		atFault = e.softAccounted(sale)
		rb.Stop()
		atStop = e.softAccounted(sale)
		rb.Start()
		t.Logf("RabbitMQ stopped and restarted in %v", time.Since(t0))
	})
	if atFault >= faultMessages {
		t.Fatalf("the consumer finished before RabbitMQ went down: the test proved nothing")
	}
	t0 := time.Now()
	testenv.WaitFor(t, 90*time.Second, "every message accounted after the restart", func() bool {
		return e.softAccounted(sale) == faultMessages
	})
	t.Logf("recovered in %v", time.Since(t0))
	e.checkExactlyOnce(sale, msgs, faultMessages)
	testenv.WaitFor(t, 10*time.Second, "the queue drained", func() bool { return queueDepth(t, e.amqp, contract.Queue) == 0 })
	t.Logf("RabbitMQ stopping with %d of %d written (%d once stopped)", atFault, faultMessages, atStop)
}

func TestKillNineMidDeliveryLosesNoWebhook(t *testing.T) {
	e := newEnv(t)
	const orders = 3000
	sale := e.sale(orders)
	msgs := e.accept(sale, orders)
	publish(t, e.amqp, sale, bodies(msgs))
	r := newReceiver(t)
	r.Fail, r.Stall, r.StallFor = 0.3, 0.01, 500*time.Millisecond
	hooks := []string{"SECKILL_WEBHOOK_URL=" + r.srv.URL, "SECKILL_WEBHOOK_SECRETS=" + hookSecretNew + "," + hookSecretOld,
		"SECKILL_WEBHOOK_TIMEOUT=300ms", "SECKILL_WEBHOOK_RETRY_MIN=10ms", "SECKILL_WEBHOOK_RETRY_MAX=200ms",
		// Enough attempts that no event is parked dead on a loaded machine, where the 300 ms
		// timeout fails many more attempts than the receiver's 30 %: the test is about the kill.
		"SECKILL_WEBHOOK_MAX_ATTEMPTS=1000",
		// The receiver is an httptest server on 127.0.0.1.
		"SECKILL_WEBHOOK_ALLOW_CIDRS=127.0.0.1/32"}

	first := e.child(50, hooks...)
	testenv.WaitFor(t, 60*time.Second, "the first deliveries", func() bool { return r.unique() >= orders/5 })
	_ = first.Process.Signal(syscall.SIGKILL)
	_ = first.Wait()
	atKill := r.unique()
	if atKill >= orders {
		t.Fatalf("every event was delivered before the kill (%d): the test proved nothing", atKill)
	}
	second := e.child(50, hooks...)
	testenv.WaitFor(t, 90*time.Second, "every order written and its event delivered", func() bool {
		return e.softAccounted(sale) == orders && r.unique() == orders &&
			e.dbInt(`SELECT count(*) FROM webhook_deliveries WHERE sale_id = $1 AND state = 'delivered'`, sale) == orders
	})
	_ = second.Process.Signal(syscall.SIGTERM)
	_ = second.Wait()
	e.checkExactlyOnce(sale, msgs, orders)
	e.checkDelivered(r, sale)
	t.Logf("killed with %d of %d events at the receiver; %d requests, %d duplicates", atKill, orders, r.requests, r.dups)
}
