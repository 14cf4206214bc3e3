package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/seckilledge/seckill/internal/egress"
)

// Where the delivery worker may connect. A webhook URL is chosen by an admin
// (a sale's webhook_url) or the operator (SECKILL_WEBHOOK_URL) and names the shop on the public
// internet. Unchecked, it would let an admin token reach what only the backend reaches (Redis,
// Postgres and the admin API on loopback, the cloud's metadata service, the private network)
// and read the outcome back from the delivery list. The policy is internal/egress; it is
// applied when a URL is accepted (CheckURL: 400 at create, a refusal to start) and to every
// address the worker dials (newClient), so a name that resolves inside later (DNS
// rebinding) is refused as well. Redirects are not followed at all. Allow
// (SECKILL_WEBHOOK_ALLOW_CIDRS) admits listed prefixes, for a shop on the same private network
// and for the demo and the tests, whose receivers listen on 127.0.0.1; never link-local or
// metadata addresses, which no allow list lifts.

// lookupTimeout bounds the name lookup of CheckURL: a slow resolver must not hold an admin
// request (or start-up) for long, and the dial-time check holds anyway.
const lookupTimeout = 2 * time.Second

// CheckURL refuses a webhook URL the worker must not call: not an absolute http(s) URL without
// credentials, or one whose host is, or resolves through Resolver to, an address inside that
// Allow does not list. A name that does not resolve is accepted: the dial is checked every time.
func (w *Worker) CheckURL(ctx context.Context, raw string) error {
	if err := ValidURL(raw); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	var be *egress.BlockedError
	if err := (egress.Policy{Allow: w.Allow}).CheckURL(ctx, w.Resolver, raw); !errors.As(err, &be) {
		return nil
	}
	u, _ := url.Parse(raw) // parsed by ValidURL
	host := u.Hostname()
	kind := be.Kind
	if kind == "metadata" {
		kind = "cloud metadata"
	}
	what := "a " + kind + " address"
	if kind[0] == 'u' || kind[0] == 'i' {
		what = "an " + kind + " address"
	}
	// A name's addresses are not echoed: the admin API must not be a window on internal DNS.
	if _, err := netip.ParseAddr(host); err == nil {
		what = host + " is " + what
	} else {
		what = host + " resolves to " + what
	}
	if kind == "cloud metadata" || kind == "link-local" {
		return errors.New(what + ": webhooks go to the shop, never to a link-local or metadata address")
	}
	return errors.New(what + ": webhooks go to the shop on the public internet (SECKILL_WEBHOOK_ALLOW_CIDRS on the backend lists the prefixes inside a receiver may use)")
}

// newClient is the worker's default client: kept-alive connections, each dialled through
// the egress policy, no proxy and no redirects.
func newClient(timeout time.Duration, conns int, policy egress.Policy) *http.Client {
	// Runs after resolution, on the address about to be connected: what is checked is what is
	// dialled.
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, ControlContext: policy.Control}
	return &http.Client{
		Transport: &http.Transport{
			// No Proxy: through a proxy the dialled address would be the proxy's, and the
			// receiver's name would be resolved and reached past the check.
			DialContext: dialer.DialContext,
			// A custom dialer turns HTTP/2 off unless asked for; the default client had it.
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   conns,
			IdleConnTimeout:       time.Minute,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
		},
		// A redirect is a misconfigured URL, not a delivery; following one would also lead the
		// worker wherever the receiver says, inside included.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// errNoWebhookURL: the sale has no webhook_url and the backend no default.
var errNoWebhookURL = errors.New("no webhook URL: the sale has none and SECKILL_WEBHOOK_URL is not set")

// attemptOutcome is what the delivery list (GET /admin/webhooks, the cockpit) records of a
// failed attempt: the receiver's status, or the kind of failure. Never the receiver's body or
// reason phrase, never the dial error's text: they name addresses and ports and tell an open
// port from a closed one, which would make the list a port scanner in the hands of anyone who
// may set a webhook_url. The log keeps the detail for the operator.
func attemptOutcome(status int, err error) string {
	var ne net.Error
	var dns *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	switch {
	case status != 0:
		return "status " + strconv.Itoa(status)
	case err == nil:
		return ""
	case errors.Is(err, errNoWebhookURL):
		return "no url"
	case errors.Is(err, egress.ErrBlocked):
		return "blocked"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF):
		return "reset"
	case errors.As(err, &dns):
		return "dns"
	case errors.As(err, &certErr), errors.As(err, &recErr), errors.As(err, &unknownCA), errors.As(err, &hostErr),
		errors.As(err, &invalidCert):
		return "tls"
	default:
		return "error"
	}
}
