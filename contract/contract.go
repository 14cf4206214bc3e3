// Package contract holds the public contracts every part of the flash-sale edge relies on:
// identifier syntax, Redis key names, the RabbitMQ topology and message body, and the stable
// JSON refusal codes. It is importable by users who write their own consumers.
//
// The authoritative description is DESIGN.md; this package is its Go form. Everything here is
// pure (names, parsers, encoders, the shard hash) except DeclareTopology, which declares the
// RabbitMQ topology on a channel the caller opened: the one call that talks to a server, kept
// here so that every party declares exactly the same queue arguments.
package contract

import (
	"encoding/json"
	"time"
)

// ValidID reports whether s is a valid user or sale identifier: 1 to 64 characters of
// [A-Za-z0-9_-]. Anything else must be refused with 400 before Redis is touched.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// Redis keys. Every key of one sale carries the hash tag {sale:<id>}, so all scripts that touch
// one sale run unchanged on Redis Cluster.

// SaleTag is the hash tag shared by every key of a sale.
func SaleTag(sale string) string { return "{sale:" + sale + "}" }

// MetaKey is the sale's hash: stock, starts_ms, ends_ms, state.
func MetaKey(sale string) string { return "seckill:" + SaleTag(sale) + ":meta" }

// BuyersKey is the sale's hash of user id -> order id.
func BuyersKey(sale string) string { return "seckill:" + SaleTag(sale) + ":buyers" }

// RoomKey is the hash of a sale's waiting room (seed, settings, counters; docs/room.md). Its
// field "seed" exists exactly when the sale has a room.
func RoomKey(sale string) string { return "seckill:" + SaleTag(sale) + ":room" }

// RoomLiveKey is the sorted set of a sale's live admissions: user -> admitted until (unix ms).
func RoomLiveKey(sale string) string { return RoomKey(sale) + ":live" }

// RoomLogKey is the list of a sale's room history, the verifier's evidence (docs/room.md):
// "a:<ms>:<stock>:<user>" per admission, "l:<ms>:<position>:<user>" per waiting place given
// up and "s:<ms>:<last_seen_ms>:<user>" per place passed while its waiter was absent
// (room_queue.lua), and "t:<ms>:<admitted_until_ms>:<user>:<nonce>" per token issued on an admission (token_issue.lua).
func RoomLogKey(sale string) string { return RoomKey(sale) + ":log" }

// RoomQueueKey is the sorted set of a sale's places (room_queue.lua): pre-queue places at
// score 0, ordered by their members' bytes (the rank first), later ones by their entry.
func RoomQueueKey(sale string) string { return RoomKey(sale) + ":q" }

// RoomSpentKey is the sorted set of a sale's spent proof-of-work nonces: nonce -> expiry.
func RoomSpentKey(sale string) string { return RoomKey(sale) + ":spent" }

// RoomSeenKey is the sorted set of a sale's waiters present: user -> present until (unix ms).
func RoomSeenKey(sale string) string { return RoomKey(sale) + ":seen" }

// RoomAwayKey is the sorted set of a sale's waiters whose place the cursor passed while they
// were absent: user -> queue index.
func RoomAwayKey(sale string) string { return RoomKey(sale) + ":away" }

// RoomBackKey is the sorted set of the away waiters seen again, admitted first.
func RoomBackKey(sale string) string { return RoomKey(sale) + ":back" }

// RoomDecidedKey is the list of a sale's recent admission decisions (room_queue.lua): one
// element per admission step or revoke that decided anything, "<admitted_until_ms>
// <kind><user> ...", kind a (admitted), s (passed while absent), f (passed, flagged) or x (a
// live admission ended early), the last 256 or so. The gateways read it with their summary's
// tick and answer the polls of the places the cursor passed from memory (docs/room.md, "Answers
// from memory"); the room hash's "decided" counts its elements ever pushed.
func RoomDecidedKey(sale string) string { return RoomKey(sale) + ":decided" }

// RoomClaimKey is the sorted set of a sale's admissions not judged yet (user -> when they are
// judged, unix ms): conversion-aware admission.
func RoomClaimKey(sale string) string { return RoomKey(sale) + ":claim" }

// RoomIdleKey is the sorted set of a sale's live admissions judged no-shows: user -> admitted
// until (unix ms).
func RoomIdleKey(sale string) string { return RoomKey(sale) + ":idle" }

// RoomKeysKey is the hash of a sale's places bound to a device key: user -> the RFC 7638
// thumbprint of the key his first bound entry proved (room_queue.lua). Under device binding
// the re-entry, the token issue (token_issue.lua) and the purchase (gate.lua) refuse any
// other key, so the admission itself, not only its ticket and token, stays on that device.
func RoomKeysKey(sale string) string { return RoomKey(sale) + ":keys" }

// RoomFlaggedKey is the set of a sale's flagged entrants (users): a bot challenge's verdict,
// a throttle ban or a rule on the request flagged their entry (docs/room.md, "The queue bots
// never leave"). A flagged user holds a place like anyone and is answered like anyone, but the
// admission step never admits him. Never published.
func RoomFlaggedKey(sale string) string { return RoomKey(sale) + ":flagged" }

// RoomOffersKey is the sorted set of a sale's open waitlist offers: user -> offer until (unix
// ms) (room_offer.lua, docs/room.md "The waitlist").
func RoomOffersKey(sale string) string { return RoomKey(sale) + ":offers" }

// RoomOfferLogKey is the list of a sale's waitlist history: each unit held, offered, bought,
// passed or given back to the open pool (room_offer.lua, compensate.lua). The invariant
// "every offer ends bought, passed or returned" is checked from it (internal/invariants).
func RoomOfferLogKey(sale string) string { return RoomKey(sale) + ":offerlog" }

// RoomLaneQueueKey is the queue of one lane of a sale's room (docs/room.md, "Lanes"): the
// same members and scores as RoomQueueKey's, for the entries of that lane. A sale with lanes
// keeps its public lane in RoomQueueKey itself, so a sale without lanes has no other queue.
func RoomLaneQueueKey(sale, lane string) string { return RoomKey(sale) + ":q:" + lane }

// RoomCodesKey is the hash of a sale's invitation codes: hex SHA-256 of the code -> its cap
// of uses (the admin API writes it; the code itself is never stored).
func RoomCodesKey(sale string) string { return RoomKey(sale) + ":codes" }

// RoomCodesUsedKey is the hash of the invitation codes' uses: hex SHA-256 of the code ->
// entries it made (room_queue.lua spends a use inside the entry, never beyond the cap).
func RoomCodesUsedKey(sale string) string { return RoomKey(sale) + ":codes:used" }

// ChallengesUserKey is the sorted set of a user's open proof-of-work challenges in a sale
// (room or draw): nonce -> expiry (unix ms), kept by challenge_issue.lua to bound them.
func ChallengesUserKey(sale, user string) string {
	return "seckill:" + SaleTag(sale) + ":challenges:user:" + user
}

// ChallengesNetKey is the sorted set of the open challenges of one client network (an IP
// prefix, "203.0.113.0/24") in a sale: nonce -> expiry (unix ms), as ChallengesUserKey.
func ChallengesNetKey(sale, net string) string {
	return "seckill:" + SaleTag(sale) + ":challenges:net:" + net
}

// DrawKey is the hash of a sale in draw mode (docs/draw.md): seed, commitment, window, entry
// counter, state, entries per variant, and the root once closed. Its field "seed" exists exactly
// when the sale is a draw.
func DrawKey(sale string) string { return "seckill:" + SaleTag(sale) + ":draw" }

// DrawEntriesKey is the hash of a draw's entries: user -> "<entry_id>:<variant>" (entered),
// "<entry_id>:<variant>:w" (withdrawn), "<entry_id>:<variant>:<pos>" (drawn; pos is the
// entry's 0-based position in its variant's ranking) or "<entry_id>:<variant>:<pos>:r" (drawn,
// and the winner's unit was released to the next rank by the draw's waitlist: he may not buy
// again).
func DrawEntriesKey(sale string) string { return DrawKey(sale) + ":entries" }

// DrawRaisesKey is the list of a draw's waitlist raises (docs/draw.md, "The waitlist"), one
// element per released unit that raised a wave's upper rank, written by compensate.lua:
// "<wave>:<pos>:<claim_until_ms>:<now_ms>:<variant>:<order id>" (pos: the position the raise
// gave, the wave's upper rank before it).
func DrawRaisesKey(sale string) string { return DrawKey(sale) + ":raises" }

// DrawFlaggedKey is the set of a draw's flagged entrants (users; docs/draw.md, "Flagged
// entrants"): entered like anyone, left out of the entries the close fixes, so they are never
// ranked and never win. Never published.
func DrawFlaggedKey(sale string) string { return DrawKey(sale) + ":flagged" }

// Draw webhook event types (DESIGN.md, "Draws").
const (
	EventDrawWon     = "draw.won"
	EventDrawLost    = "draw.lost"
	EventDrawExpired = "draw.expired"
)

// TokensKey holds the sale's single-use purchase token nonces.
func TokensKey(sale string) string { return "seckill:" + SaleTag(sale) + ":tokens" }

// ProofKey records a spent proof of possession (its jti) of a device-bound purchase, for as
// long as the proof could be accepted (lua/gate.lua, SET NX PX): a replay is refused on every
// gateway. On the sale's (or shard's) hash tag, so it goes in the purchase's script call.
func ProofKey(sale, jti string) string { return "seckill:" + SaleTag(sale) + ":proof:" + jti }

// PrivacyPassKey records a spent Privacy Pass token of a sale's entries (its nonce, in hex)
// for as long as the token could be accepted (SET NX PX, caddymodule/botcheck): a token is
// spent once across every gateway.
func PrivacyPassKey(sale, nonce string) string {
	return "seckill:" + SaleTag(sale) + ":privacypass:" + nonce
}

// OutboxKey is the stream of accepted orders of a sale, drained by the relay.
func OutboxKey(sale string) string { return "seckill:" + SaleTag(sale) + ":outbox" }

// CompensatedKey records order ids whose unit was already returned to Redis stock, so that
// compensation is idempotent per order.
func CompensatedKey(sale string) string { return "seckill:" + SaleTag(sale) + ":compensated" }

// SalesIndexKey is the set of sale ids preheated into Redis; relays discover outboxes from it.
const SalesIndexKey = "seckill:sales"

// EventsChannel is the pub/sub channel on which sold-out and restock events are broadcast to
// every gateway instance.
const EventsChannel = "seckill:events"

// LockPrefix starts the Redis names of the backend's distributed locks (package redislock):
// LockPrefix + "{<name>}", with ":fence" and ":released" beside it.
const LockPrefix = "seckill:lock:"

// ThrottleKey is the key of one throttle zone's counter for one client key.
func ThrottleKey(zone, key string) string { return "seckill:rl:{" + zone + ":" + key + "}" }

// ThrottleBanKey is the hash of one throttle zone's ban of one client key (field
// banned_until, unix ms): the counter's key plus ":ban", in the counter's slot. The waiting
// room reads it for users its admission step admitted (ban_zones).
func ThrottleBanKey(zone, key string) string { return ThrottleKey(zone, key) + ":ban" }

// Meta hash field names.
const (
	FieldStock    = "stock"
	FieldStartsMS = "starts_ms"
	FieldEndsMS   = "ends_ms"
	FieldState    = "state"
	// FieldNamespace is the deployment that preheated the sale (the backend's
	// SECKILL_NAMESPACE): a gateway's relay takes only the outboxes of its own namespace's
	// sales. Absent means the unnamed deployment ("").
	FieldNamespace = "namespace"
)

// RabbitMQ topology.
const (
	Exchange        = "seckill"
	Queue           = "seckill.orders"
	DeadExchange    = "seckill.dead"
	DeadQueue       = "seckill.orders.dead"
	RoutingPrefix   = "order."
	DefaultDelivery = 5 // quorum queue x-delivery-limit before a message is dead-lettered
)

// RoutingKey is the routing key of a sale's order messages.
func RoutingKey(sale string) string { return RoutingPrefix + sale }

// OrderMessage is the body of a winner's message (JSON, persistent). Consumers must be
// idempotent: the same message may arrive twice.
//
// Variant, Quantity and Seq are set only for a sale with variants or a per-user limit above 1
// (docs/DESIGN.md, "Variants and quantities"); they are omitted otherwise, so a single-stock
// sale's message is byte for byte what it always was. Read them with Units and Seq.
type OrderMessage struct {
	OrderID    string    `json:"order_id"`
	SaleID     string    `json:"sale_id"`
	UserID     string    `json:"user_id"`
	AcceptedAt time.Time `json:"accepted_at"`
	// Variant is the variant bought; "" for a single-stock sale.
	Variant string `json:"variant,omitempty"`
	// Quantity is the units bought, 1..MaxQuantity; 0 (absent) means 1.
	Quantity int `json:"quantity,omitempty"`
	// SeqNo is the user's purchase number in the sale, 1-based; 0 (absent) means 1.
	SeqNo int `json:"seq,omitempty"`
}

// Units is the number of units the order takes: its quantity, 1 when absent.
func (m OrderMessage) Units() int {
	if m.Quantity <= 0 {
		return 1
	}
	return m.Quantity
}

// Seq is the user's purchase number in the sale (1 for the first, and for every order of a
// sale with a limit of 1).
func (m OrderMessage) Seq() int {
	if m.SeqNo <= 0 {
		return 1
	}
	return m.SeqNo
}

// Validate reports whether a decoded message is well formed.
func (m OrderMessage) Validate() error {
	switch {
	case m.OrderID == "" || len(m.OrderID) > 64:
		return errBadMessage("order_id")
	case !ValidID(m.SaleID):
		return errBadMessage("sale_id")
	case !ValidID(m.UserID):
		return errBadMessage("user_id")
	case m.AcceptedAt.IsZero():
		return errBadMessage("accepted_at")
	case m.Variant != "" && !ValidVariantID(m.Variant):
		return errBadMessage("variant")
	case m.Quantity < 0 || m.Quantity > MaxQuantity:
		return errBadMessage("quantity")
	case m.SeqNo < 0:
		return errBadMessage("seq")
	}
	return nil
}

// DecodeOrderMessage parses and validates a message body.
func DecodeOrderMessage(body []byte) (OrderMessage, error) {
	var m OrderMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return m, err
	}
	return m, m.Validate()
}

type errBadMessage string

func (e errBadMessage) Error() string { return "order message: missing or invalid " + string(e) }

// Refusal codes of the HTTP contract. They are stable: clients switch on them.
const (
	CodeUnauthenticated = "unauthenticated"
	CodeBadRequest      = "bad_request"
	CodeUnknownSale     = "unknown_sale"
	CodeNotStarted      = "not_started"
	CodeEnded           = "ended"
	CodeInvalidToken    = "invalid_token"
	CodeTokenUsed       = "token_used"
	CodeTokenExpired    = "token_expired"
	CodeSoldOut         = "sold_out"
	CodeAlreadyBought   = "already_bought"
	CodeRateLimited     = "rate_limited"
	CodeUnavailable     = "unavailable"
	CodeUnknownOrder    = "unknown_order"
	CodeNotPayable      = "not_payable"
	// CodePaused (503, with Retry-After): the operator paused the sale (meta field state =
	// StatePaused); nothing is accepted and no token is issued until it is resumed.
	CodePaused = "paused"
	// CodeLimitReached (409): the purchase would take the user above the sale's per-user
	// limit; the body's "held" says how many units the user holds already.
	CodeLimitReached = "limit_reached"
	// CodeNotAdmitted (403): the sale has a waiting room, seckill_token or seckill_gate
	// requires an admission (require_admission) and the user has no live one (at the gate: at
	// the moment of the purchase).
	CodeNotAdmitted = "not_admitted"
	// CodeQueueFull (503, with Retry-After): the sale's waiting room holds its maximum number
	// of places (max_waiters); a user who has a place keeps it.
	CodeQueueFull = "queue_full"
	// CodeInvitationUnknown (403): the entry names an invitation code the sale never issued
	// (or the sale has no invitation lane).
	CodeInvitationUnknown = "invitation_unknown"
	// CodeInvitationExhausted (403): the invitation code made as many entries as its cap of
	// uses allows, across every gateway.
	CodeInvitationExhausted = "invitation_exhausted"
	// CodeInvalidChallenge (403): a proof of work missing, wrong, replayed, foreign, forged,
	// or sealed below the sale's minimum difficulty (room and draw entries).
	CodeInvalidChallenge = "invalid_challenge"
	// CodeChallengeExpired (403): a genuine challenge presented after its life (expires_at);
	// get a new one. A challenge lives seconds, so a stock fetched before a rush is
	// worthless in it.
	CodeChallengeExpired = "challenge_expired"
	// CodeTooManyChallenges (429, with Retry-After: until the oldest open one expires): the
	// user, or his network (an IP prefix), holds the most open challenges a sale allows.
	CodeTooManyChallenges = "too_many_challenges"
	// CodeBotChallengeRequired (403; 401 with WWW-Authenticate for Privacy Pass): the site
	// has a challenge_provider and the entry (or token request) carries no token of it
	// (X-Seckill-Challenge-Token, or a PrivateToken Authorization).
	CodeBotChallengeRequired = "bot_challenge_required"
	// CodeBotChallengeFailed (403; 401 with WWW-Authenticate for Privacy Pass): the
	// provider's token is not good: forged, spent, expired, or made for another site, sale or
	// action. Solve the challenge again.
	CodeBotChallengeFailed = "bot_challenge_failed"
	// CodeCrossSite (403): a state-changing request of the edge (entering a room or a draw, a
	// token, a purchase) that a browser sent from another site: Sec-Fetch-Site cross-site, or an
	// Origin that is not the request's own. Requests without those headers (curl,
	// apps) are not affected.
	CodeCrossSite = "cross_site"

	// Device binding (DESIGN.md "Device-bound tokens and tickets"): a purchase
	// token or room ticket sealed with the thumbprint of a key the page cannot export, spent
	// only with a fresh proof of that key in the DPoP header (RFC 9449 style).

	// CodeProofRequired (401): the sale requires device binding (device_binding required),
	// or the token or ticket is bound, and the request carries no DPoP proof.
	CodeProofRequired = "proof_required"
	// CodeInvalidProof (401): the DPoP header is not a well-formed proof (compact JWS, typ
	// dpop+jwt, ES256, a public P-256 jwk, htm, htu, iat, a jti of 16 to 64 base64url
	// characters), its signature does not verify with its own key, or its ath is not the
	// hash of the token or ticket presented with it.
	CodeInvalidProof = "invalid_proof"
	// CodeProofWrongTarget (401): a genuine proof made for another method or URL.
	CodeProofWrongTarget = "proof_wrong_target"
	// CodeProofExpired (401): a proof whose iat is older than the window (proof_max_age,
	// default 60s) or more than 5s in the future: make a new one.
	CodeProofExpired = "proof_expired"
	// CodeProofReplayed (401): a proof whose jti was already presented to this sale (across
	// every gateway: recorded in the purchase's script call); a client makes one per request.
	CodeProofReplayed = "proof_replayed"
	// CodeProofKeyMismatch (403): the token or ticket was sealed with another key than the
	// proof's: a copy used on another device.
	CodeProofKeyMismatch = "proof_key_mismatch"
	// CodeUnboundToken (403): the sale requires device binding and the token or ticket was
	// issued without a key: take a new one with a proof.
	CodeUnboundToken = "unbound_token"
)

// Values of the meta hash field "state" that the gate and token scripts act on.
const (
	StateOpen   = "open"
	StatePaused = "paused" // refuse everything with 503 paused until the field changes
	StateEnded  = "ended"  // refuse with 403 ended, as after ends_ms
)

// Refusal is the JSON body of every refusal.
type Refusal struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	OrderID string `json:"order_id,omitempty"`
	// Variant names the variant a sold_out refusal is about (a sale with variants).
	Variant string `json:"variant,omitempty"`
	// Held is the units the user holds in the sale already (limit_reached).
	Held int `json:"held,omitempty"`
}

// Order statuses.
const (
	StatusQueued    = "queued"
	StatusCreated   = "created"
	StatusFailed    = "failed"
	StatusPaid      = "paid"
	StatusCancelled = "cancelled"
)

// Events broadcast on EventsChannel: "<kind>:<sale>". EventWindow says the sale's window
// changed (the backend's window control, a preheat that moved it): a gateway forgets the
// window it remembered and asks Redis again.
const (
	EventSoldOut = "sold_out"
	EventRestock = "restock"
	EventWindow  = "window"
)
