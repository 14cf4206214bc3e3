//go:build integration

package redislock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckilledge/seckill/internal/testenv"
)

// Child processes: the test binary re-executes itself with -test.run=^TestHelperProcess$ and
// REDISLOCK_CHILD naming the role.
const childEnv = "REDISLOCK_CHILD"

func startChild(t *testing.T, role string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), childEnv+"="+role), env...)
	return cmd
}

func TestHelperProcess(t *testing.T) {
	role := os.Getenv(childEnv)
	if role == "" {
		return // not a child: nothing to do
	}
	rdb := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(), PoolSize: 64})
	defer rdb.Close()
	lk := New(rdb, nil)
	key := os.Getenv("REDISLOCK_KEY")
	switch role {
	case "increment":
		g, _ := strconv.Atoi(os.Getenv("REDISLOCK_G"))
		n, _ := strconv.Atoi(os.Getenv("REDISLOCK_N"))
		if err := incrementMany(rdb, key, os.Getenv("REDISLOCK_COUNTER"), g, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "hold":
		ttl, _ := time.ParseDuration(os.Getenv("REDISLOCK_TTL"))
		l, err := lk.Obtain(context.Background(), key, &Options{TTL: ttl, Watchdog: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("held %d\n", l.Token())
		select {} // hold (and renew) until killed
	}
	os.Exit(0)
}

// incrementMany runs g goroutines that each add 1 to counter n times with a read-modify-write
// (GET, pause, SET) that loses updates unless the lock excludes every other writer.
func incrementMany(rdb redis.UniversalClient, key, counter string, g, n int) error {
	ctx := context.Background()
	lk := New(rdb, nil) // shared by the goroutines, as a program shares one
	errs := make(chan error, g)
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for range n {
				l, err := lk.Obtain(ctx, key, &Options{Wait: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				v, err := rdb.Get(ctx, counter).Int()
				if err != nil && !errors.Is(err, redis.Nil) {
					errs <- err
					return
				}
				time.Sleep(200 * time.Microsecond) // widen the lost-update window
				if err := rdb.Set(ctx, counter, v+1, time.Hour).Err(); err != nil {
					errs <- err
					return
				}
				if err := l.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func TestLockSerialisesReadModifyWriteAcrossGoroutinesAndProcesses(t *testing.T) {
	rdb := testenv.Redis(t)
	key, counter := testenv.ID("lk"), "seckill:test:"+testenv.ID("counter")
	t.Cleanup(func() { rdb.Del(context.Background(), counter) })
	const perProcess, perGoroutine = 25, 20 // 2 processes x 25 goroutines x 20 = 1000

	child := startChild(t, "increment", "REDISLOCK_KEY="+key, "REDISLOCK_COUNTER="+counter,
		"REDISLOCK_G="+strconv.Itoa(perProcess), "REDISLOCK_N="+strconv.Itoa(perGoroutine))
	var childOut strings.Builder
	child.Stdout, child.Stderr = &childOut, &childOut
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	local := incrementMany(rdb, key, counter, perProcess, perGoroutine)
	childErr := child.Wait()
	if local != nil {
		t.Fatalf("this process: %v", local)
	}
	if childErr != nil {
		t.Fatalf("child process: %v\n%s", childErr, childOut.String())
	}
	got, err := rdb.Get(context.Background(), counter).Int()
	if err != nil {
		t.Fatal(err)
	}
	if got != 2*perProcess*perGoroutine {
		t.Fatalf("counter = %d, want %d: the lock let two writers in", got, 2*perProcess*perGoroutine)
	}
}

func TestCrashedHolderLockFreesItselfAfterItsTTL(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	ctx := context.Background()
	key := testenv.ID("lk")
	const ttl = 1500 * time.Millisecond
	child := startChild(t, "hold", "REDISLOCK_KEY="+key, "REDISLOCK_TTL="+ttl.String())
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "held ") {
		t.Fatalf("child did not take the lock: %q %v", line, err)
	}
	heldAt := time.Now()
	// The child's watchdog keeps the lock beyond one TTL while it lives: await a renewal (the
	// lease's remaining time goes up) seen after the first lease would have run out.
	lockKey, _, _ := lk.Keys(key)
	last, renewedLate := rdb.PTTL(ctx, lockKey).Val(), false
	testenv.WaitFor(t, 10*time.Second, "the watchdog to renew the lease past its first term", func() bool {
		p := rdb.PTTL(ctx, lockKey).Val()
		if p <= 0 {
			t.Fatalf("the lock of a live, renewing holder is gone (PTTL %v)", p)
		}
		if p > last && time.Since(heldAt) > ttl {
			renewedLate = true
		}
		last = p
		return renewedLate
	})
	if _, err := lk.TryObtain(ctx, key, nil); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("TryObtain while the child holds and renews = %v, want ErrNotObtained", err)
	}

	_ = child.Process.Signal(syscall.SIGKILL) // crash: no release, no renewal
	_ = child.Wait()
	killed := time.Now()
	if _, err := lk.TryObtain(ctx, key, nil); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("right after the crash TryObtain = %v, want ErrNotObtained (the lease still runs)", err)
	}
	l, err := lk.Obtain(ctx, key, &Options{Wait: 10 * time.Second, Retry: NoRetry()})
	if err != nil {
		t.Fatalf("the crashed holder's lock never freed itself: %v", err)
	}
	defer l.Release(ctx)
	if waited := time.Since(killed); waited > ttl+3*time.Second {
		t.Fatalf("obtained %v after the crash, want about the TTL (%v)", waited, ttl)
	}
	held, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "held ")), 10, 64)
	if l.Token() <= held {
		t.Fatalf("token after the crash %d, not above the crashed holder's %d", l.Token(), held)
	}
}

func TestWatchdogKeepsTheLockThroughWorkLastingThreeTimesTheTTL(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	ctx := context.Background()
	key := testenv.ID("lk")
	// Renewals every 500 ms leave a second of slack: the 2-core CI machine, under -race and
	// other packages' tests, has been seen to stall for more than 500 ms.
	const ttl = 1500 * time.Millisecond
	l, err := lk.Obtain(ctx, key, &Options{TTL: ttl, Watchdog: true})
	if err != nil {
		t.Fatal(err)
	}
	workEnds := time.Now().Add(3*ttl + 100*time.Millisecond)
	for time.Now().Before(workEnds) { // the "work": meanwhile nobody else gets in
		if other, err := lk.TryObtain(ctx, key, nil); !errors.Is(err, ErrNotObtained) {
			t.Fatalf("a second holder got in while the watchdog ran: %v %v", other, err)
		}
		select {
		case <-l.Lost():
			t.Fatal("Lost fired while the watchdog renewed the lease")
		case <-time.After(25 * time.Millisecond):
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release after long work: %v", err)
	}
	if _, err := lk.TryObtain(ctx, key, &Options{TTL: time.Second}); err != nil {
		t.Fatalf("after release the lock is not free: %v", err)
	}
}

func TestDefaultOptionsGiveA30sLeaseThatTheWatchdogRenews(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	ctx := context.Background()
	key := testenv.ID("lk")
	l, err := lk.TryObtain(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	lockKey, fenceKey, _ := lk.Keys(key)
	if pttl := rdb.PTTL(ctx, lockKey).Val(); pttl < 29*time.Second || pttl > DefaultTTL {
		t.Fatalf("default lease PTTL = %v, want about %v", pttl, DefaultTTL)
	}
	if pttl := rdb.PTTL(ctx, fenceKey).Val(); pttl < FenceRetention-time.Minute {
		t.Fatalf("fence counter PTTL = %v, want about %v", pttl, FenceRetention)
	}
	if !l.watchdog {
		t.Fatal("watchdog is off with default options")
	}
}

func TestWatchdogStopsWhenTheHoldingsContextEnds(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	key := testenv.ID("lk")
	ctx, cancel := context.WithCancel(context.Background())
	l, err := lk.Obtain(ctx, key, &Options{TTL: 200 * time.Millisecond, Watchdog: true})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost did not fire after the context ended and the lease ran out")
	}
	testenv.WaitFor(t, 5*time.Second, "lock free after its context ended", func() bool {
		o, err := lk.TryObtain(context.Background(), key, &Options{TTL: time.Second})
		return err == nil && o.Release(context.Background()) == nil
	})
}

func TestLostFiresWhenTheLockIsTakenAway(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	ctx := context.Background()
	key := testenv.ID("lk")
	l, err := lk.Obtain(ctx, key, &Options{TTL: 300 * time.Millisecond, Watchdog: true})
	if err != nil {
		t.Fatal(err)
	}
	lockKey, _, _ := lk.Keys(key)
	rdb.Del(ctx, lockKey) // an operator, or a failover that lost the write
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the watchdog did not report the lost lock")
	}
	if err := l.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Release of a lost lock = %v, want ErrNotHeld", err)
	}
}

func TestReleaseWakesAWaiterWithoutPolling(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	other := testenv.Redis(t) // the holder's own client: its release reaches the waiter only by pub/sub
	otherLk := New(other, nil)
	ctx := context.Background()
	key := testenv.ID("lk")
	holder, err := otherLk.Obtain(ctx, key, nil) // 30 s lease: only the release can explain a fast wake-up
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *Lock
		at  time.Time
		err error
	}
	got := make(chan result, 1)
	waiting := onWaiting(t, lk, key)
	go func() {
		l, err := lk.Obtain(ctx, key, &Options{Wait: 20 * time.Second, Retry: NoRetry()})
		got <- result{l, time.Now(), err}
	}()
	_, _, channel := lk.Keys(key)
	awaitWaiting(t, waiting)
	testenv.WaitFor(t, 5*time.Second, "waiter subscribed", func() bool {
		n := rdb.PubSubNumSub(ctx, channel).Val()
		return n[channel] > 0
	})
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	defer r.l.Release(ctx)
	latency := r.at.Sub(released)
	t.Logf("wake-up latency %v", latency)
	if latency > 2*time.Second { // generous: the benchmark measures it precisely
		t.Fatalf("waiter obtained %v after the release: not woken by the release message", latency)
	}
	if r.l.Token() <= holder.Token() {
		t.Fatalf("waiter token %d not above the holder's %d", r.l.Token(), holder.Token())
	}
}

func TestWaitingObtainGivesUpWithErrNotObtained(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	ctx := context.Background()
	key := testenv.ID("lk")
	holder, err := lk.Obtain(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release(ctx)
	if _, err := lk.Obtain(ctx, key, &Options{Wait: 150 * time.Millisecond}); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("Obtain on a held lock = %v, want ErrNotObtained", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = lk.Obtain(cctx, key, &Options{Wait: time.Minute})
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Obtain with an ending context = %v, want ErrNotObtained and DeadlineExceeded", err)
	}
	lk.mu.Lock()
	h := lk.hub
	lk.mu.Unlock()
	if h != nil {
		t.Fatal("the pub/sub hub was left open after every waiter left")
	}
}

func TestReentrantObtainNeedsAsManyReleases(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	ctx := context.Background()
	key := testenv.ID("lk")
	outer, err := lk.Obtain(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Nested code gets the owner through the context and re-enters instead of deadlocking.
	nested := WithOwner(ctx, outer.Owner())
	inner, err := lk.Obtain(nested, key, &Options{Wait: time.Second})
	if err != nil {
		t.Fatalf("re-entry by the holder: %v", err)
	}
	if inner.Token() != outer.Token() {
		t.Fatalf("re-entry token %d, want the holding's %d", inner.Token(), outer.Token())
	}
	held := func() bool {
		o, err := lk.TryObtain(ctx, key, nil)
		if err != nil && !errors.Is(err, ErrNotObtained) {
			t.Fatal(err)
		}
		if err == nil {
			_ = o.Release(ctx)
		}
		return err != nil
	}
	if !held() {
		t.Fatal("another owner got a re-entered lock")
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !held() {
		t.Fatal("obtained twice, released once: the lock must still be held")
	}
	if err := inner.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second Release of one handle = %v, want ErrNotHeld (and no effect)", err)
	}
	if !held() {
		t.Fatal("a double Release of the inner handle freed the outer holding")
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if held() {
		t.Fatal("obtained twice, released twice: the lock must be free")
	}
}

func TestReleaseNeverDeletesAnotherHoldersLock(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	ctx := context.Background()
	key := testenv.ID("lk")
	lockKey, _, _ := lk.Keys(key)
	owner := NewOwner()
	stale, err := lk.Obtain(ctx, key, &Options{TTL: 100 * time.Millisecond, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	<-stale.Lost() // the lease ran out (fixed TTL, no watchdog)
	testenv.WaitFor(t, 5*time.Second, "expired lock gone", func() bool { return rdb.Exists(ctx, lockKey).Val() == 0 })

	other, err := lk.TryObtain(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := stale.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("expired holder's Release = %v, want ErrNotHeld", err)
	}
	if err := stale.Refresh(ctx, time.Minute); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("expired holder's Refresh = %v, want ErrNotHeld", err)
	}
	if _, err := lk.TryObtain(ctx, key, nil); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("after a stale Release the new holder's lock is gone: %v", err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// The same owner's later holding is a different holding: the stale handle's token differs.
	stale2, err := lk.Obtain(ctx, key, &Options{TTL: 100 * time.Millisecond, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	<-stale2.Lost()
	testenv.WaitFor(t, 5*time.Second, "expired lock gone", func() bool { return rdb.Exists(ctx, lockKey).Val() == 0 })
	again, err := lk.TryObtain(ctx, key, &Options{Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Release(ctx)
	if err := stale2.Release(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("stale handle of the same owner: Release = %v, want ErrNotHeld", err)
	}
	if rdb.Exists(ctx, lockKey).Val() != 1 {
		t.Fatal("a stale handle of the same owner deleted the owner's new holding")
	}
}

func TestRefreshExtendsAFixedLease(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	ctx := context.Background()
	key := testenv.ID("lk")
	l, err := lk.TryObtain(ctx, key, &Options{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if err := l.Refresh(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	lockKey, _, _ := lk.Keys(key)
	if pttl := rdb.PTTL(ctx, lockKey).Val(); pttl < 50*time.Second {
		t.Fatalf("PTTL after Refresh(1m) = %v", pttl)
	}
}

func TestFencingTokensIncreaseWithEveryHoldingEvenAfterTheCounterIsLost(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	ctx := context.Background()
	key := testenv.ID("lk")
	_, fenceKey, _ := lk.Keys(key)
	var last int64
	for i := range 6 {
		if i == 3 {
			rdb.Del(ctx, fenceKey) // expiry, or a failover that lost the latest INCR
		}
		l, err := lk.TryObtain(ctx, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= last {
			t.Fatalf("holding %d got token %d, not above %d", i, l.Token(), last)
		}
		last = l.Token()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInvalidLockNamesAreRefused(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	for _, name := range []string{"", "a{b", "}", "{x}"} {
		if _, err := lk.TryObtain(context.Background(), name, nil); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("TryObtain(%q) = %v, want ErrInvalidKey", name, err)
		}
	}
}

func TestLostFiresWhenRedisIsUnreachableForALease(t *testing.T) {
	srv := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1,
		DialTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	lk := New(rdb, nil)
	ctx := context.Background()
	l, err := lk.Obtain(ctx, testenv.ID("lk"), &Options{TTL: 600 * time.Millisecond, Watchdog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill() // renewals now fail; the holder cannot know whether it still holds the lock
	killed := time.Now()
	select {
	case <-l.Lost():
		// The local deadline is the last renewal's send time + TTL: at most one TTL away.
		if d := time.Since(killed); d > 600*time.Millisecond+2*time.Second {
			t.Fatalf("Lost fired %v after Redis died, want within about one TTL", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Lost did not fire while Redis was unreachable")
	}
}

func TestWaitersOfOneLockerAreServedInArrivalOrder(t *testing.T) {
	rdb := testenv.Redis(t)
	lk := New(rdb, nil)
	ctx := context.Background()
	key := testenv.ID("lk")
	_, _, channel := lk.Keys(key)
	holder, err := lk.Obtain(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	queued := func() int {
		lk.mu.Lock()
		h := lk.hub
		lk.mu.Unlock()
		if h == nil {
			return 0
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.queues[channel])
	}
	const n = 5
	order := make(chan int, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			// NoRetry: only wake-ups move a waiter, so the order is the hub's, not a poll's.
			l, err := lk.Obtain(ctx, key, &Options{Wait: 20 * time.Second, Retry: NoRetry()})
			if err != nil {
				errs <- err
				return
			}
			order <- i
			errs <- l.Release(ctx)
		}()
		testenv.WaitFor(t, 5*time.Second, "waiter queued", func() bool { return queued() == i+1 })
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Fatalf("waiter %d obtained the lock in turn %d: not arrival order", got, want)
		}
		want++
	}
}

// onWaiting returns a channel that receives each time a waiting Obtain of lk for the lock
// name is about to block (subscribed, its attempt failed).
func onWaiting(t *testing.T, lk *Locker, name string) <-chan struct{} {
	t.Helper()
	ch := make(chan struct{}, 1)
	f := func(n string) {
		if n == name {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	lk.waiting = f // before the waiter starts: Obtain reads it unlocked
	return ch
}

// awaitWaiting waits for a signal of onWaiting.
func awaitWaiting(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no waiter blocked on the lock within 10s")
	}
}
