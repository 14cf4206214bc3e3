package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/egress"
)

// hookSecretNew signs the test requests (at least MinSecretLength characters).
const hookSecretNew = "hook-secret-new-0123456789"

// A failed attempt is recorded as a coarse outcome: the status, or the kind of failure. Never
// the receiver's body or reason phrase, never a dial error naming addresses and ports.
func TestAFailedAttemptIsRecordedAsACoarseOutcome(t *testing.T) {
	t.Parallel()
	dial := func(err error) error {
		return &url.Error{Op: "Post", URL: "http://10.1.2.3:6379/hooks",
			Err: &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 6379}, Err: err}}
	}
	for _, tc := range []struct {
		status int
		err    error
		want   string
	}{
		{500, errors.New("receiver answered 500 Internal Server Error: redis version 7.2"), "status 500"},
		{302, errors.New("receiver answered 302 Found"), "status 302"},
		{0, dial(&egress.BlockedError{Addr: netip.MustParseAddr("10.1.2.3"), Kind: "private"}), "blocked"},
		{0, dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), "refused"},
		{0, dial(os.NewSyscallError("read", syscall.ECONNRESET)), "reset"},
		{0, fmt.Errorf("post: %w", context.DeadlineExceeded), "timeout"},
		{0, dial(&timeoutErr{}), "timeout"},
		{0, &url.Error{Op: "Post", URL: "http://shop.internal/", Err: &net.DNSError{Err: "no such host", Name: "shop.internal", IsNotFound: true}}, "dns"},
		{0, errNoWebhookURL, "no url"},
		{0, &url.Error{Op: "Post", URL: "https://10.0.0.1/", Err: &tls.CertificateVerificationError{Err: x509.HostnameError{Host: "10.0.0.1"}}}, "tls"},
		{0, errors.New("something else at 10.0.0.1:6379"), "error"},
	} {
		got := attemptOutcome(tc.status, tc.err)
		if got != tc.want {
			t.Errorf("%d %v: %q, want %q", tc.status, tc.err, got, tc.want)
		}
	}
}

type timeoutErr struct{}

func (*timeoutErr) Error() string   { return "i/o timeout" }
func (*timeoutErr) Timeout() bool   { return true }
func (*timeoutErr) Temporary() bool { return true }

// The worker's own client, without a database: with the policy on, a receiver on 127.0.0.1 is
// never connected to; with it off, a redirect is not followed (not even to a loopback address:
// the worker goes only where the URL says) and counts as a failed attempt.
func TestTheWebhookClientDialsNothingInsideAndFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	var hits, redirected atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { redirected.Add(1) }))
	defer target.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, target.URL+"/admin", http.StatusFound)
	}))
	defer srv.Close()
	d := delivery{event: contract.WebhookEvent{ID: "e1", Type: contract.EventOrderCreated}, url: srv.URL + "/hooks"}

	guarded := &Worker{Secrets: []string{hookSecretNew}, Timeout: time.Second}
	guarded.init()
	status, err := guarded.post(d)
	if status != 0 || !errors.Is(err, egress.ErrBlocked) || attemptOutcome(status, err) != "blocked" || hits.Load() != 0 {
		t.Fatalf("guarded: status %d, err %v, %d requests reached the receiver", status, err, hits.Load())
	}

	open := &Worker{Secrets: []string{hookSecretNew}, Timeout: time.Second, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	open.init()
	status, err = open.post(d)
	if status != http.StatusFound || err == nil || attemptOutcome(status, err) != "status 302" || hits.Load() != 1 || redirected.Load() != 0 {
		t.Fatalf("allow 127.0.0.1/32: status %d, err %v, %d hits, %d redirected", status, err, hits.Load(), redirected.Load())
	}
}
