// Package roomkit is what the waiting room (seckill_room) and the draw (seckill_draw) share,
// as one part both handlers embed: the subject (sale, user), the proof-of-work challenges and
// their issue, the limits on Redis calls, the buyer's page (compiled at provision, served with
// its CSP), the sealer the challenges and tickets are sealed with, the logger, the endpoints'
// writer and counters, and the options of all these with their Caddyfile parsing.
package roomkit

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/seckilledge/seckill/caddymodule"
	"github.com/seckilledge/seckill/caddymodule/botcheck/botcheckcaddy"
	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/internal/metric"
	"github.com/seckilledge/seckill/caddymodule/internal/pagecsp"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit/pagecaddy"
	"github.com/seckilledge/seckill/caddymodule/internal/placeholder"
	"github.com/seckilledge/seckill/caddymodule/sealed"
	"github.com/seckilledge/seckill/caddymodule/sealed/sealedhttp"
	clientjs "github.com/seckilledge/seckill/clients/js"
	"github.com/seckilledge/seckill/contract"
)

// Defaults of the shared optional fields.
const (
	DefaultDifficultyRate = 100.0
	DefaultTimeout        = time.Second
	DefaultRetryAfter     = time.Second
	DefaultCacheTTL       = 2 * time.Second
)

// Kit is the part of a room's or a draw's handler that both share. Its options are the
// handler's own in JSON and in the Caddyfile (Unmarshal).
type Kit struct {
	// sale, user.
	handler.Subject

	// shared is the handler's place in a dispatched route (handler.Dispatch), if it stands in one.
	shared *handler.Share
	// Entries per second (per sale, counted in Redis across every gateway) up to which the
	// difficulty of the proof of work stays at its minimum; it grows by one bit each time the
	// entry rate doubles beyond, up to the maximum. Default 100.
	DifficultyRate float64 `json:"difficulty_rate,omitempty"`
	// challenge_life (default 30s), challenges_per_user (3), challenges_per_net (500),
	// challenge_prefix ([24, 48]): a challenge is accepted at the difficulty it was issued with
	// for its whole life, and these stop a stockpile (docs/room.md, "Proof of work").
	sealedhttp.Challenges
	// The origins allowed to frame the page (the Content-Security-Policy's frame-ancestors
	// sources, e.g. "https://shop.example"). Default: none may.
	FrameAncestors []string `json:"frame_ancestors,omitempty"`
	// The page buyers see: the shop's html/template file, its message catalogues, the
	// language (instead of Accept-Language), each per site or per sale (docs/room.md, "The
	// shop's own page"; the draw's template fields are the room's plus .Variants). Default:
	// our page, in the buyer's language.
	Page *pagekit.Config `json:"page,omitempty"`
	// Retry-After sent with 503 (and with the room's paused state). Default 1s.
	RetryAfter caddy.Duration `json:"retry_after,omitempty"`
	// How long a gateway keeps a sale's settings before reading them again. Default 2s.
	CacheTTL caddy.Duration `json:"cache_ttl,omitempty"`

	// timeout (default 1s, per Redis call), max_pending, handle_errors.
	handler.Limits

	// A bot challenge every entry must pass, checked once per entry, never per poll:
	// turnstile, hcaptcha, recaptcha or privacypass, with fail_open or fail_closed
	// (docs/room.md, "Bot challenge providers"). Default: none.
	ChallengeProvider *botcheckcaddy.Provider `json:"challenge_provider,omitempty"`
	// Request matcher sets (Caddy's, as a route's "match"): an entry that matches any of them
	// is flagged, entered like anyone and never admitted nor drawn (docs/room.md, "The queue
	// bots never leave"). Default: none.
	FlagRaw  caddyhttp.RawMatcherSets `json:"flag,omitempty" caddy:"namespace=http.matchers"`
	flagSets caddyhttp.MatcherSets

	// Issuer seals and issues the challenges (its Sealer the tickets too), from the app's
	// token keys at provision.
	Issuer sealed.Issuer `json:"-"`
	// Logger is the handler's sampled logger, set by the handler before SetDefaults.
	Logger *zap.Logger `json:"-"`
	// Endpoints answers and refuses as every handler with endpoints does, counted.
	Endpoints handler.Endpoints `json:"-"`
	// Calls bounds each Redis call (timeout, max_pending).
	Calls edge.Caller `json:"-"`
	// Pages is the page, compiled at provision (SetupPage).
	Pages *pagekit.Kit `json:"-"`

	counts Metrics
	// sale and user are the Subject's templates resolved at SetDefaults (SaleOf, UserOf).
	sale, user placeholder.Value
}

// Metrics are the handler's own collectors the kit counts into.
type Metrics struct {
	// Requests by endpoint and answer; Challenges by outcome (issued, bounded, solved,
	// refused); Shed, the requests shed without touching Redis.
	Requests, Challenges *prometheus.CounterVec
	Shed                 prometheus.Counter
}

// NewMetrics declares the collectors every room and draw has, under the handler's subsystem:
// requests_total by endpoint and answer (the label answer names; requestsHelp its help),
// challenges_total by outcome (its four outcomes counted from zero) and shed_total; what
// names the handler's requests in the help of shed_total ("Waiting-room requests").
func NewMetrics(s metric.Subsystem, answer, requestsHelp, what string) Metrics {
	m := Metrics{
		Requests: s.CounterVec("requests_total", requestsHelp, "endpoint", answer),
		Challenges: s.CounterVec("challenges_total", "Proof-of-work challenges: issued, bounded (not issued: the user or his network "+
			"holds too many open ones), solved (accepted at entry) and refused (missing, wrong, replayed, foreign, expired or below the minimum).",
			"outcome"),
		Shed: s.Counter("shed_total", what+" answered 503 without touching Redis because max_pending calls were already waiting on it."),
	}
	for _, o := range []string{"issued", "bounded", "solved", "refused"} {
		m.Challenges.WithLabelValues(o)
	}
	return m
}

// Endpoints is an endpoints' writer counted into m, its log lines naming the handler (name),
// without a refusal writer's options: SetDefaults adds them.
func (m Metrics) Endpoints(name string) handler.Endpoints {
	return handler.Endpoints{Requests: m.Requests, Shed: m.Shed, Name: name}
}

// Register registers m's collectors and the handler's own (more) into reg.
func (m Metrics) Register(reg prometheus.Registerer, more ...prometheus.Collector) {
	metric.Register(reg, append([]prometheus.Collector{m.Requests, m.Challenges, m.Shed}, more...)...)
}

// SetDefaults sets the shared defaults and makes the writer and the caller; name is the
// handler's in log lines ("room", "draw").
func (k *Kit) SetDefaults(name string, m Metrics) {
	k.Subject.SetDefaults()
	k.sale, k.user = placeholder.Compile(k.Sale), placeholder.Compile(k.User)
	k.Challenges.SetDefaults()
	if k.DifficultyRate == 0 {
		k.DifficultyRate = DefaultDifficultyRate
	}
	if k.RetryAfter <= 0 {
		k.RetryAfter = caddy.Duration(DefaultRetryAfter)
	}
	if k.CacheTTL == 0 {
		k.CacheTTL = caddy.Duration(DefaultCacheTTL)
	}
	k.counts = m
	k.Calls = k.Caller(DefaultTimeout)
	k.Endpoints = m.Endpoints(name)
	k.Endpoints.Writer, k.Endpoints.RetryAfter, k.Endpoints.Logger = k.Writer(0), time.Duration(k.RetryAfter), k.Logger
}

// Share places the handler in its route's dispatch (caddymodule.App, at start).
func (k *Kit) Share(d *handler.Dispatch, i int) { k.shared.Set(d, i) }

// Passes reports whether the handler stands in a dispatched route and r is not its own.
func (k *Kit) Passes(r *http.Request) bool { return k.shared.Passes(r) }

// SaleOf is the request's sale: the sale option as Caddy's replacer reads it, without parsing
// the template per request (one path segment, header or variable is read directly).
func (k *Kit) SaleOf(r *http.Request, repl *caddy.Replacer) string {
	if k.sale.Template() != k.Sale { // options set after SetDefaults (a test's)
		return repl.ReplaceAll(k.Sale, "")
	}
	return k.sale.Get(r, repl)
}

// UserOf is the request's user, read as SaleOf reads the sale and checked as handler.User
// checks it: none is 401 unauthenticated, a malformed one 400 bad_request.
func (k *Kit) UserOf(r *http.Request, repl *caddy.Replacer) (string, handler.Refusal, bool) {
	if k.user.Template() != k.User {
		return handler.User(repl, k.User)
	}
	user := k.user.Get(r, repl)
	if user == "" {
		return "", handler.Unauthenticated, false
	}
	if !contract.ValidID(user) {
		return "", handler.BadRequest, false
	}
	return user, handler.Refusal{}, true
}

// Register registers a handler's module and its Caddyfile directive, ordered just before
// anchor (a standard directive). Its constraint is the handler's interface guard: a handler
// that is not a provisioned, validated middleware does not compile.
func Register[T any, PT interface {
	*T
	caddy.Module
	caddy.Provisioner
	caddy.Validator
	caddyfile.Unmarshaler
	caddyhttp.MiddlewareHandler
}](directive, anchor string) {
	caddy.RegisterModule(PT(new(T)))
	httpcaddyfile.RegisterHandlerDirective(directive, handler.Directive[T, PT])
	httpcaddyfile.RegisterDirectiveOrder(directive, httpcaddyfile.Before, anchor)
}

// Provision takes the sampled logger, sets the handler's defaults (setDefaults, which calls
// SetDefaults), compiles the page, registers the kit's collectors and the handler's own (own)
// and takes the app's token keys; module is the handler's name in errors ("seckill_room"). No
// network I/O.
func (k *Kit) Provision(ctx caddy.Context, module string, kind pagekit.Kind, setDefaults func(), own ...prometheus.Collector) (*caddymodule.App, error) {
	k.Logger = edge.SampledLogger(ctx.Logger())
	k.shared = new(handler.Share)
	// The URL space first: the default sale is the path segment after the prefix.
	space, err := k.Subject.Inherit(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", module, err)
	}
	setDefaults()
	if err := k.SetupPage(kind); err != nil {
		return nil, fmt.Errorf("%s: %w", module, err)
	}
	k.Pages.Mount(space.Prefix, space.OrdersPrefix)
	k.counts.Register(ctx.GetMetricsRegistry(), own...)
	app, issuer, err := sealedhttp.Provision(ctx, module)
	if err != nil {
		return nil, err
	}
	k.Issuer = issuer
	if k.ChallengeProvider != nil {
		if err := k.ChallengeProvider.Provision(app.RedisClient(), k.Logger); err != nil {
			return nil, fmt.Errorf("%s: %w", module, err)
		}
	}
	// Registered whether or not a provider is set, so the families a gateway exports do not
	// depend on one site's options.
	metric.Register(ctx.GetMetricsRegistry(), botcheckcaddy.Challenges)
	if err := k.provisionFlag(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", module, err)
	}
	return app, nil
}

// PageKind is a handler's page for pagekit, from its files: page.html, the page's own part
// (html/template: "main"; the kit's document around it), and page.js, the page's own code,
// which follows the JavaScript client (clients/js/seckill.js, the very bytes published to
// npm) and the kit's in the page's one module script, whose hash the Content-Security-Policy
// names. name is the first part of its message keys ("room", "draw").
func PageKind(name string, files fs.FS) pagekit.Kind {
	html, err := fs.ReadFile(files, "page.html")
	if err != nil {
		panic(err) // embedded: cannot happen
	}
	js, err := fs.ReadFile(files, "page.js")
	if err != nil {
		panic(err)
	}
	return pagekit.Kind{Name: name, Template: string(html), Script: pagekit.Script(clientjs.Source, string(js))}
}

// SetupPage compiles the page options (our page of kind, or the shop's template), checked
// here so that a bad template fails at provision.
func (k *Kit) SetupPage(kind pagekit.Kind) (err error) {
	var cfg pagekit.Config
	if k.Page != nil {
		cfg = *k.Page
	}
	// A CAPTCHA provider's widget on the page (Privacy Pass has none: the browser presents
	// its tokens).
	if p := k.ChallengeProvider; p != nil && pagekit.HasWidget(p.Name) {
		cfg.Widget = &pagekit.Widget{Provider: p.Name, SiteKey: p.SiteKey, Action: p.Action, ScriptURL: p.WidgetScriptURL}
	}
	k.Pages, err = pagekit.New(kind, cfg)
	return err
}

// Validate checks the shared options, after SetDefaults; module names the handler in errors.
func (k *Kit) Validate(module string) error {
	switch {
	case k.DifficultyRate <= 0:
		return fmt.Errorf("%s: difficulty_rate must be positive", module)
	case k.CacheTTL < 0:
		return fmt.Errorf("%s: cache_ttl must not be negative", module)
	}
	if err := pagecsp.CheckAncestors(module, k.FrameAncestors); err != nil {
		return err
	}
	return k.Challenges.Validate(module)
}

// ServePage answers the page of sale, with data for its template (the draw's variants; nil
// for the room's).
func (k *Kit) ServePage(w http.ResponseWriter, r *http.Request, sale string, data []string) error {
	if k.counts.Requests != nil { // nil only in a test that compiled the page alone
		k.counts.Requests.WithLabelValues("page", "ok").Inc()
	}
	return k.Pages.Serve(w, r, sale, data, k.FrameAncestors)
}

// Level is a sale's proof of work for a new challenge: the difficulty in force now (the
// challenge keeps it for its whole short life) and the sale's maximum; or the refusal (the
// sale has no room or no draw), or the error of reading the sale.
type Level func(ctx context.Context) (difficulty, ceiling int, ref handler.Refusal, err error)

// ServeChallenge answers GET /seckill/{sale}/challenge (or the draw's own path): a challenge
// for the user at the sale's level, counted as issued, or as bounded when the user or his
// network holds too many open ones.
func (k *Kit) ServeChallenge(ctx context.Context, w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, sale string, level Level) error {
	if r.Method != http.MethodGet {
		return k.Endpoints.MethodNotAllowed(w, "challenge", "GET")
	}
	user, ref, ok := k.UserOf(r, repl)
	if !ok {
		return k.Endpoints.Refuse(w, "challenge", ref)
	}
	d, ceiling, ref, err := level(ctx)
	if err != nil {
		return k.Endpoints.Unavailable(w, "challenge", err)
	}
	if ref.Status != 0 {
		return k.Endpoints.Refuse(w, "challenge", ref)
	}
	a, ref, err := k.Issue(ctx, k.Calls, k.Issuer, r, sale, user, d, ceiling)
	if err != nil {
		return k.Endpoints.Unavailable(w, "challenge", err)
	}
	if ref.Status != 0 {
		k.counts.Challenges.WithLabelValues("bounded").Inc()
		return k.Endpoints.Refuse(w, "challenge", ref)
	}
	k.counts.Challenges.WithLabelValues("issued").Inc()
	return k.Endpoints.Answer(w, "challenge", "issued", http.StatusOK, a)
}

// Unmarshal reads the handler's Caddyfile block: the shared options here (sale, user, the
// challenges', the limits', difficulty_rate, page, frame_ancestors, retry_after, cache_ttl,
// challenge_provider, flag), the handler's own through option, which reports whether it knows the
// name.
func (k *Kit) Unmarshal(d *caddyfile.Dispenser, module string, option func(name string) (known bool, err error)) error {
	return k.UnmarshalBlock(d, module, func(name string) (bool, error) {
		var err error
		switch name {
		case "difficulty_rate":
			err = handler.FloatArg(d, &k.DifficultyRate)
		case "page":
			if k.Page == nil {
				k.Page = new(pagekit.Config)
			}
			err = pagecaddy.Unmarshal(d, k.Page)
		case "frame_ancestors":
			k.FrameAncestors = d.RemainingArgs()
			if len(k.FrameAncestors) == 0 {
				err = d.Errf("frame_ancestors takes one or more sources")
			}
		case "retry_after":
			err = handler.DurationArg(d, &k.RetryAfter)
		case "cache_ttl":
			err = handler.DurationArg(d, &k.CacheTTL)
		case "challenge_provider":
			k.ChallengeProvider = new(botcheckcaddy.Provider)
			err = k.ChallengeProvider.UnmarshalCaddyfile(d)
		case "flag":
			// flag { <matchers> }: one matcher set per flag block, any of them flags.
			var set caddy.ModuleMap
			set, err = caddyhttp.ParseCaddyfileNestedMatcherSet(d)
			if err == nil {
				k.FlagRaw = append(k.FlagRaw, set)
			}
		default:
			return option(name)
		}
		return true, err
	}, &k.Subject, &k.Challenges)
}
