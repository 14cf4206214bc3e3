package identity

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
)

// Defaults of the JWKS source.
const (
	DefaultJWKSRefresh     = 5 * time.Minute
	DefaultJWKSMinInterval = 15 * time.Second
	// jwksTimeout bounds one fetch of the document.
	jwksTimeout = 5 * time.Second
	// firstRetry is the wait after a failed fetch when no key was ever loaded; it doubles up to
	// the refresh interval, so a gateway that started while the shop was down recovers within
	// seconds of the shop coming back without hammering it meanwhile.
	firstRetry = time.Second
)

// jwksPool keeps one JWKS source per URL across config reloads: a reload neither refetches
// the keys nor forgets the last good ones (the JWKS endpoint may be down during the reload).
var jwksPool = caddy.NewUsagePool()

// JWKS is the keys published at one URL, refreshed in the background. Requests read the
// current set without a lock; a token with an unknown kid asks for one early fetch, at most
// one per MinInterval (so forged kids cannot turn the gateway into a flood of the shop's JWKS
// endpoint). A failed fetch keeps the last good set.
type JWKS struct {
	url    string
	client *http.Client
	now    func() time.Time

	keys atomic.Pointer[keySet]
	// ready is closed once the first fetch has finished, well or badly: a request arriving
	// right after start waits for it instead of being refused for lack of keys.
	ready chan struct{}

	refresh     atomic.Int64 // time.Duration
	minInterval atomic.Int64 // time.Duration
	logger      atomic.Pointer[zap.Logger]

	mu        sync.Mutex
	lastFetch time.Time     // start of the last fetch, background or early
	inflight  chan struct{} // closed when the fetch under way ends; nil when none
	fetches   atomic.Int64  // every fetch attempt (tests and the log)

	kick chan struct{}   // wakes the background loop after an early fetch
	ctx  context.Context // canceled by Destruct: ends the loop and any fetch under way
	stop context.CancelFunc
	done chan struct{}
}

// newJWKS starts the source of url: it fetches at once, then every refresh.
func newJWKS(url string, client *http.Client, refresh, minInterval time.Duration, logger *zap.Logger, now func() time.Time) *JWKS {
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &JWKS{url: url, client: client, now: now, ready: make(chan struct{}), kick: make(chan struct{}, 1),
		ctx: ctx, stop: cancel, done: make(chan struct{})}
	j.configure(refresh, minInterval, logger)
	go j.run(ctx)
	return j
}

// configure applies the settings of the newest config that uses this URL.
func (j *JWKS) configure(refresh, minInterval time.Duration, logger *zap.Logger) {
	j.refresh.Store(int64(refresh))
	j.minInterval.Store(int64(minInterval))
	j.logger.Store(logger)
}

// Destruct stops the background refresh when the last config using the URL is unloaded.
func (j *JWKS) Destruct() error {
	j.stop()
	<-j.done
	return nil
}

// Key implements KeySource. It waits (for the first fetch after start, or for an early fetch)
// at most keyWait.
func (j *JWKS) Key(ctx context.Context, kid string) (*Key, error) {
	ks := j.keys.Load()
	if ks == nil {
		if !wait(ctx, j.ready) {
			return nil, errNoKeys
		}
		if ks = j.keys.Load(); ks == nil {
			return nil, errNoKeys
		}
	}
	if k := (*ks)[kid]; k != nil {
		return k, nil
	}
	// A kid we do not know: the shop may have rotated its key since the last fetch.
	if !j.fetchEarly(ctx) {
		return nil, errUnknownKey
	}
	if k := (*j.keys.Load())[kid]; k != nil {
		return k, nil
	}
	return nil, errUnknownKey
}

// fetchEarly fetches the document now unless a fetch started less than MinInterval ago; a
// fetch already under way is joined. It reports whether a fetch ended while it waited.
func (j *JWKS) fetchEarly(ctx context.Context) bool {
	j.mu.Lock()
	done := j.inflight
	if done == nil {
		if j.now().Sub(j.lastFetch) < time.Duration(j.minInterval.Load()) {
			j.mu.Unlock()
			return false
		}
		done = j.begin()
		// Not the request's context: one impatient client must not fail the fetch that
		// others wait for.
		go func() {
			j.fetch(j.ctx)
			select {
			case j.kick <- struct{}{}:
			default:
			}
		}()
	}
	j.mu.Unlock()
	return wait(ctx, done)
}

// wait waits for done, at most keyWait and never past ctx. The timer is made only here:
// the common path (a known kid) allocates nothing.
func wait(ctx context.Context, done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
	}
	t := time.NewTimer(keyWait)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// begin marks a fetch as started; j.mu is held.
func (j *JWKS) begin() chan struct{} {
	j.lastFetch = j.now()
	j.inflight = make(chan struct{})
	return j.inflight
}

// run is the background refresh: a fetch at once, then one every Refresh (a fetch that failed
// before any key was loaded is retried sooner, see firstRetry).
func (j *JWKS) run(ctx context.Context) {
	defer close(j.done)
	j.fetchNow(ctx)
	close(j.ready)
	retry := firstRetry
	for {
		next := time.Duration(j.refresh.Load())
		if j.keys.Load() == nil {
			next, retry = min(retry, next), min(2*retry, next)
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-j.kick:
			// An early fetch just ran: the next regular one is a full interval from now.
			t.Stop()
			continue
		case <-t.C:
		}
		j.fetchNow(ctx)
	}
}

// fetchNow fetches, or waits for the fetch under way.
func (j *JWKS) fetchNow(ctx context.Context) {
	j.mu.Lock()
	if done := j.inflight; done != nil {
		j.mu.Unlock()
		<-done
		return
	}
	j.begin()
	j.mu.Unlock()
	j.fetch(ctx)
}

// fetch gets and parses the document once; j.inflight was set by begin. On failure the last
// good set stays.
func (j *JWKS) fetch(ctx context.Context) {
	defer func() {
		j.mu.Lock()
		close(j.inflight)
		j.inflight = nil
		j.mu.Unlock()
	}()
	j.fetches.Add(1)
	logger := j.logger.Load()
	ks, skipped, err := j.get(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return // shutting down
		}
		jwksFetches.WithLabelValues("error").Inc()
		if j.keys.Load() == nil {
			logger.Error("no JWKS loaded: every session is refused with 503 until the JWKS endpoint answers",
				zap.String("jwks_url", j.url), zap.Error(err))
		} else {
			logger.Warn("JWKS refresh failed; the last good keys stay in use",
				zap.String("jwks_url", j.url), zap.Error(err))
		}
		return
	}
	for _, s := range skipped {
		logger.Warn("JWKS key skipped", zap.String("jwks_url", j.url), zap.String("why", s))
	}
	jwksFetches.WithLabelValues("ok").Inc()
	if prev := j.keys.Load(); prev != nil {
		ks = keepUnchanged(*prev, ks)
	}
	j.keys.Store(&ks)
	logger.Debug("JWKS loaded", zap.String("jwks_url", j.url), zap.Int("keys", len(ks)))
}

func (j *JWKS) get(ctx context.Context) (keySet, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, jwksTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.url, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := j.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("JWKS endpoint answered %s", resp.Status)
	}
	doc, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS+1))
	if err != nil {
		return nil, nil, err
	}
	if len(doc) > maxJWKS {
		return nil, nil, fmt.Errorf("JWKS document over %d bytes", maxJWKS)
	}
	return parseJWKS(doc)
}

// staticKeys is the keys written in the configuration.
type staticKeys keySet

// Key implements KeySource.
func (s staticKeys) Key(_ context.Context, kid string) (*Key, error) {
	if k := s[kid]; k != nil {
		return k, nil
	}
	return nil, errUnknownKey
}

// keySources tries static keys first, then the JWKS: both may be configured while a shop
// moves from a shared secret to a published key.
type keySources struct {
	static staticKeys
	jwks   *JWKS
}

// Key implements KeySource.
func (s keySources) Key(ctx context.Context, kid string) (*Key, error) {
	if k := s.static[kid]; k != nil {
		return k, nil
	}
	if s.jwks == nil {
		return nil, errUnknownKey
	}
	return s.jwks.Key(ctx, kid)
}
