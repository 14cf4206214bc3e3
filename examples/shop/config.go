package shop

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/seckilledge/seckill/contract"
)

// Config is the sample shop's configuration. Every field has a flag and an environment
// variable (ConfigFromFlags); the flag wins. Secrets come from the environment only.
type Config struct {
	// Listen is the shop's address (SECKILL_SHOP_LISTEN, -listen; default 127.0.0.1:3000). The
	// gateway proxies to it and fetches the keys from it; buyers reach it through the gateway.
	Listen string
	// PublicURL is where buyers reach the shop: the issuer of its sessions, which the gateway's
	// seckill_identity expects (SECKILL_SHOP_PUBLIC_URL, -public-url; default
	// http://localhost:8088, the gateway's shop site of make run).
	PublicURL string
	// BackendAdmin is the base URL of the backend's admin listener, where payments are
	// confirmed (SECKILL_SHOP_BACKEND_ADMIN, -backend-admin; default http://127.0.0.1:8082).
	BackendAdmin string
	// ShopToken is the backend token of role shop (SECKILL_SHOP_TOKEN, environment only). Empty:
	// the pay button answers that payments are not configured.
	ShopToken string
	// WebhookSecret checks the backend's webhooks: the first secret of SECKILL_WEBHOOK_SECRETS
	// (environment only), the one the backend signs with first. Empty: every webhook is refused.
	WebhookSecret string
	// KeyFile holds the session signing key (PEM, EC P-256) (SECKILL_SHOP_KEY_FILE, -key-file).
	// Missing file: a new key is written there. Empty: a new key in memory at every start.
	KeyFile string
	// Sales are the sale ids the page offers (SECKILL_SHOP_SALES, -sales; default
	// demo,demo-room, the sales make run creates).
	Sales []string
	// Prefix and OrdersPrefix are where the gateway's routes are on this site (the seckill
	// app's prefix and orders_prefix; SECKILL_PREFIX, SECKILL_ORDERS_PREFIX, which the shipped
	// Caddyfiles read too; -prefix, -orders-prefix): the page calls the gateway there. Default
	// /seckill and /orders.
	Prefix, OrdersPrefix string
	// SessionTTL is how long a session lasts (default 1 hour).
	SessionTTL time.Duration
	// Events is how many webhook deliveries GET /webhooks keeps (default 100). The list
	// names buyers: GET /webhooks answers only with the shop token (ShopToken) as bearer.
	Events int
	// Demo acknowledges that this shop signs anyone in by name alone, without a password
	// (-demo). Required: a sample that anyone could copy into production must not start
	// without saying so.
	Demo bool
}

// DemoNotice is what -demo means, printed at start.
const DemoNotice = "DEMO: this shop signs in anyone who types a user name, with no password; it keeps orders in memory. Never expose it to buyers as it is."

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// ConfigFromFlags reads the environment, then the command line.
func ConfigFromFlags(fs *flag.FlagSet, args []string) (Config, error) {
	c := Config{SessionTTL: time.Hour, Events: 100}
	var sales string
	fs.StringVar(&c.Listen, "listen", getenv("SECKILL_SHOP_LISTEN", "127.0.0.1:3000"), "address to listen on (SECKILL_SHOP_LISTEN)")
	fs.StringVar(&c.PublicURL, "public-url", getenv("SECKILL_SHOP_PUBLIC_URL", "http://localhost:8088"), "where buyers reach the shop; the issuer of its sessions (SECKILL_SHOP_PUBLIC_URL)")
	fs.StringVar(&c.BackendAdmin, "backend-admin", getenv("SECKILL_SHOP_BACKEND_ADMIN", "http://127.0.0.1:8082"), "the backend's admin listener, where payments are confirmed (SECKILL_SHOP_BACKEND_ADMIN)")
	fs.StringVar(&c.KeyFile, "key-file", os.Getenv("SECKILL_SHOP_KEY_FILE"), "session signing key (PEM, P-256); written when missing; empty: a new key at every start (SECKILL_SHOP_KEY_FILE)")
	fs.StringVar(&sales, "sales", getenv("SECKILL_SHOP_SALES", "demo,demo-room"), "sale ids the page offers, comma separated (SECKILL_SHOP_SALES)")
	fs.StringVar(&c.Prefix, "prefix", getenv("SECKILL_PREFIX", "/seckill"), "the gateway's buyer routes on this site (SECKILL_PREFIX)")
	fs.StringVar(&c.OrdersPrefix, "orders-prefix", getenv("SECKILL_ORDERS_PREFIX", "/orders"), "the gateway's order status route (SECKILL_ORDERS_PREFIX)")
	fs.DurationVar(&c.SessionTTL, "session-ttl", c.SessionTTL, "how long a session lasts")
	fs.IntVar(&c.Events, "events", c.Events, "webhook deliveries kept for GET /webhooks")
	fs.BoolVar(&c.Demo, "demo", false, "required: acknowledge that sign-in takes no password (a demo shop)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.ShopToken = os.Getenv("SECKILL_SHOP_TOKEN")
	c.WebhookSecret, _, _ = strings.Cut(os.Getenv("SECKILL_WEBHOOK_SECRETS"), ",")
	c.WebhookSecret = strings.TrimSpace(c.WebhookSecret)
	for _, s := range strings.Split(sales, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.Sales = append(c.Sales, s)
		}
	}
	return c, c.Validate()
}

// Validate checks what New relies on.
func (c Config) Validate() error {
	if !c.Demo {
		return errors.New("the sample shop signs anyone in without a password: start it with -demo to say that is what you want")
	}
	u, err := url.Parse(c.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("public URL %q: want http(s)://host[:port]", c.PublicURL)
	}
	if c.BackendAdmin != "" {
		if u, err := url.Parse(c.BackendAdmin); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("backend admin URL %q: want http(s)://host[:port]", c.BackendAdmin)
		}
	}
	for _, s := range c.Sales {
		if !contract.ValidID(s) {
			return fmt.Errorf("sale id %q: want 1-64 of [A-Za-z0-9_-]", s)
		}
	}
	if c.SessionTTL <= 0 {
		return errors.New("session TTL must be positive")
	}
	for _, p := range []string{c.Prefix, c.OrdersPrefix} {
		if p != "" && (!routePrefix.MatchString(p) || slices.Contains(strings.Split(p, "/"), ".") || slices.Contains(strings.Split(p, "/"), "..")) {
			return fmt.Errorf("prefix %q: want a path such as /seckill or /shop-api/drop", p)
		}
	}
	return nil
}

// routePrefix is a prefix the gateway accepts (its handler.CheckPrefix, without linking Caddy).
var routePrefix = regexp.MustCompile(`^(/[A-Za-z0-9._~-]+)+$`)
