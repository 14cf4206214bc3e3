package core

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Defaults of the JWKS source.
const (
	DefaultJWKSRefresh     = 5 * time.Minute
	DefaultJWKSMinInterval = 15 * time.Second
	// DefaultJWKSMaxStale is how long the last good keys stay in use while every refresh
	// fails: long enough to ride out an outage of the shop's JWKS endpoint through a sale,
	// short enough that a key the shop dropped stops being trusted the same day.
	DefaultJWKSMaxStale = 6 * time.Hour
	// jwksTimeout bounds one fetch of the document.
	jwksTimeout = 5 * time.Second
	// keyWait bounds how long a request waits for keys (the first fetch after start, or an
	// early fetch for an unknown kid).
	keyWait = 3 * time.Second
)

// The background retry while no usable key is loaded (at start, or once the keys went stale):
// after coldRetry.first, doubling up to coldRetry.most (or the refresh interval when
// shorter): doubling up to jwks_refresh (5 min) would keep buyers at 503 for minutes after
// the shop is back. A variable so a test can take the background loop out of the way.
var coldRetry = struct{ first, most time.Duration }{time.Second, 4 * time.Second}

// nextColdRetry is the wait before the next background fetch while no usable key is loaded,
// and the one after it.
func nextColdRetry(retry, refresh, most time.Duration) (wait, after time.Duration) {
	return min(retry, refresh, most), min(2*retry, refresh, most)
}

// JWKS is the keys published at one URL, refreshed in the background. Requests read the
// current set without a lock; a token with an unknown kid asks for one early fetch, at most
// one per MinInterval (so forged kids cannot turn the gateway into a flood of the shop's JWKS
// endpoint). A failed fetch keeps the last good set.
type JWKS struct {
	url    string
	client *http.Client
	now    func() time.Time

	keys atomic.Pointer[KeySet]
	// loadedAt is when keys was last fetched successfully (unix ns, j.now's clock): keys older
	// than maxStale are not used.
	loadedAt atomic.Int64
	// started is when the source was made (unix ns, j.now's clock), the age gauge's origin
	// before the first successful fetch.
	started int64
	// ready is closed once the first fetch has finished, well or badly: a request arriving
	// right after start waits for it instead of being refused for lack of keys.
	ready chan struct{}

	refresh     atomic.Int64 // time.Duration
	minInterval atomic.Int64 // time.Duration
	maxStale    atomic.Int64 // time.Duration; 0: no limit
	// retryFirst, retryMost: coldRetry when the source was made.
	retryFirst, retryMost time.Duration
	logger                atomic.Pointer[zap.Logger]

	mu        sync.Mutex
	lastFetch time.Time     // start of the last fetch, background or early
	inflight  chan struct{} // closed when the fetch under way ends; nil when none
	fetches   atomic.Int64  // every fetch attempt (tests and the log)

	kick chan struct{}   // wakes the background loop after an early fetch
	ctx  context.Context // canceled by Destruct: ends the loop and any fetch under way
	stop context.CancelFunc
	done chan struct{}
}

// NewJWKS starts the source of url: it fetches at once, then every refresh.
func NewJWKS(url string, client *http.Client, refresh, minInterval time.Duration, logger *zap.Logger, now func() time.Time) *JWKS {
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &JWKS{url: url, client: client, now: now, ready: make(chan struct{}), kick: make(chan struct{}, 1),
		ctx: ctx, stop: cancel, done: make(chan struct{}), retryFirst: coldRetry.first, retryMost: coldRetry.most}
	j.Configure(refresh, minInterval, DefaultJWKSMaxStale, logger)
	j.started = now().UnixNano()
	jwksSources.Store(j, struct{}{})
	go j.run(ctx)
	return j
}

// Configure applies the settings of the newest config that uses this URL.
func (j *JWKS) Configure(refresh, minInterval, maxStale time.Duration, logger *zap.Logger) {
	j.refresh.Store(int64(refresh))
	j.minInterval.Store(int64(minInterval))
	j.maxStale.Store(int64(maxStale))
	j.logger.Store(logger)
}

// usable is the key set requests may use: nil before the first successful fetch, and once
// the last one is older than max_stale (the shop may have dropped a key since).
func (j *JWKS) usable() *KeySet {
	ks := j.keys.Load()
	if ks == nil {
		return nil
	}
	if ms := time.Duration(j.maxStale.Load()); ms > 0 && j.now().Sub(time.Unix(0, j.loadedAt.Load())) > ms {
		return nil
	}
	return ks
}

// Age is the time since the last successful fetch (since the source was made, before the
// first one).
func (j *JWKS) Age() time.Duration {
	at := j.loadedAt.Load()
	if at == 0 {
		at = j.started
	}
	return j.now().Sub(time.Unix(0, at))
}

// URL is where the keys are fetched from.
func (j *JWKS) URL() string { return j.url }

// Fetches is the number of fetches attempted so far, background or early.
func (j *JWKS) Fetches() int64 { return j.fetches.Load() }

// Done is closed once the background refresh has ended (after Destruct).
func (j *JWKS) Done() <-chan struct{} { return j.done }

// Destruct stops the background refresh (the glue calls it when the last config using the
// URL is unloaded; it is a caddy.Destructor without importing Caddy).
func (j *JWKS) Destruct() error {
	jwksSources.Delete(j)
	j.stop()
	<-j.done
	return nil
}

// Key implements KeySource. It waits (for the first fetch after start, or for an early fetch)
// at most keyWait.
func (j *JWKS) Key(ctx context.Context, kid string) (*Key, error) {
	ks := j.usable()
	if ks == nil {
		if !wait(ctx, j.ready) {
			return nil, ErrNoKeys
		}
		if ks = j.usable(); ks == nil {
			// Nothing usable (the endpoint was down at start, or long enough for the keys to
			// go stale): this request may fetch, at most once per jwks_min_interval, so buyers
			// are served as soon as the shop answers again and not at the next background
			// retry.
			j.fetchEarly(ctx)
			if ks = j.usable(); ks == nil {
				return nil, ErrNoKeys
			}
		}
	}
	if k := (*ks)[kid]; k != nil {
		return k, nil
	}
	// A kid we do not know: the shop may have rotated its key since the last fetch.
	if !j.fetchEarly(ctx) {
		return nil, ErrUnknownKey
	}
	if ks := j.usable(); ks != nil && (*ks)[kid] != nil {
		return (*ks)[kid], nil
	}
	return nil, ErrUnknownKey
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

// run is the background refresh: a fetch at once, then one every Refresh (while no usable key
// is loaded, sooner: see coldRetry).
func (j *JWKS) run(ctx context.Context) {
	defer close(j.done)
	j.fetchNow(ctx)
	close(j.ready)
	retry := j.retryFirst
	for {
		next := time.Duration(j.refresh.Load())
		if j.usable() == nil {
			next, retry = nextColdRetry(retry, next, j.retryMost)
		} else {
			retry = j.retryFirst
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
		if j.usable() == nil {
			logger.Error("no usable JWKS (none loaded yet, or the last is older than jwks_max_stale): every session is refused with 503 until the JWKS endpoint answers",
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
	j.loadedAt.Store(j.now().UnixNano())
	j.keys.Store(&ks)
	logger.Debug("JWKS loaded", zap.String("jwks_url", j.url), zap.Int("keys", len(ks)))
}

func (j *JWKS) get(ctx context.Context) (KeySet, []string, error) {
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

// StaticKeys is the keys written in the configuration.
type StaticKeys KeySet

// Key implements KeySource.
func (s StaticKeys) Key(_ context.Context, kid string) (*Key, error) {
	if k := s[kid]; k != nil {
		return k, nil
	}
	return nil, ErrUnknownKey
}

// KeySources tries static keys first, then the JWKS: both may be configured while a shop
// moves from a shared secret to a published key.
type KeySources struct {
	Static StaticKeys
	JWKS   *JWKS // nil: static keys only
}

// Key implements KeySource.
func (s KeySources) Key(ctx context.Context, kid string) (*Key, error) {
	if k := s.Static[kid]; k != nil {
		return k, nil
	}
	if s.JWKS == nil {
		return nil, ErrUnknownKey
	}
	return s.JWKS.Key(ctx, kid)
}

// JWKSClient fetches every JWKS: its own connections, no proxy from the environment.
var JWKSClient = &http.Client{
	Transport: &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: 10 * time.Minute, ForceAttemptHTTP2: true},
	// A JWKS behind a redirect is followed (CDNs do that), within the client's default limit,
	// but never down to plain http.
	CheckRedirect: noDowngrade,
}

// maxJWKSRedirects is net/http's default limit, kept.
const maxJWKSRedirects = 10

// noDowngrade refuses a redirect of the JWKS fetch that leaves https, or that goes to plain
// http on a host that is not loopback: the keys decide who is signed in, so they travel
// authenticated or not at all.
func noDowngrade(req *http.Request, via []*http.Request) error {
	if len(via) >= maxJWKSRedirects {
		return fmt.Errorf("stopped after %d redirects", maxJWKSRedirects)
	}
	if req.URL.Scheme == "https" {
		return nil
	}
	for _, prev := range via {
		if prev.URL.Scheme == "https" {
			return fmt.Errorf("refused a redirect from https to %s", req.URL.Redacted())
		}
	}
	if !LoopbackHost(req.URL.Hostname()) {
		return fmt.Errorf("refused a redirect to plain http on a host that is not loopback: %s", req.URL.Redacted())
	}
	return nil
}

// LoopbackHost reports whether host (no port) is this machine: localhost or a loopback IP.
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
