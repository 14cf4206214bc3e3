package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/edge"
	"github.com/seckilledge/seckill/caddymodule/tokenformat"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/shardcache"
)

// fakeStore answers token_issue from a table per target and records the targets. rooms are
// the targets with a waiting room, admitted the users with a live admission: as the script,
// it refuses with NotAdmitted only when asked to (admission) for a target with a room, and a
// target with a room with Misconfigured when not asked to.
type fakeStore struct {
	reply    map[string]Reply
	err      error
	rooms    map[string]bool
	admitted map[string]bool
	targets  []string
}

func (s *fakeStore) Issue(_ context.Context, is Issuance) (Reply, error) {
	target, user, nonce, ttl, lead, admission := is.Target, is.User, is.Nonce, is.TTL, is.Lead, is.Admission
	s.targets = append(s.targets, target)
	if s.err != nil {
		return Reply{}, s.err
	}
	if len(nonce) != 22 || ttl <= 0 || lead < 0 {
		return Reply{}, errors.New("bad arguments")
	}
	if !admission && s.rooms[target] {
		return Reply{Outcome: Misconfigured}, nil
	}
	if admission && s.rooms[target] && !s.admitted[user] {
		return Reply{Outcome: NotAdmitted}, nil
	}
	r, ok := s.reply[target]
	if !ok {
		return Reply{Outcome: UnknownSale}, nil
	}
	return r, nil
}

func TestTokenIssuingRules(t *testing.T) {
	exp := time.Date(2026, 11, 30, 12, 2, 0, 0, time.UTC)
	shard := contract.UserShardID("s1", "u1", 4)
	cases := []struct {
		name      string
		sale      string
		user      string
		reply     map[string]Reply
		err       error
		admission bool            // require_admission
		rooms     map[string]bool // sales with a room
		admitted  map[string]bool // users with a live admission
		nonceErr  error
		want      Outcome
		wantOrder string
		targets   int
	}{
		{name: "anonymous", sale: "s1", want: Unauthenticated},
		{name: "bad user", sale: "s1", user: "u\x00", want: BadRequest},
		{name: "bad sale", sale: "", user: "u1", want: BadRequest},
		{name: "no randomness", sale: "s1", user: "u1", nonceErr: errors.New("no entropy"), want: Unavailable},
		{name: "issued", sale: "s1", user: "u1", reply: map[string]Reply{"s1": {Outcome: Issued, Expires: exp}}, want: Issued, targets: 1},
		{name: "unknown sale", sale: "s1", user: "u1", want: UnknownSale, targets: 1},
		{name: "not started", sale: "s1", user: "u1", reply: map[string]Reply{"s1": {Outcome: NotStarted}}, want: NotStarted, targets: 1},
		{name: "ended", sale: "s1", user: "u1", reply: map[string]Reply{"s1": {Outcome: Ended}}, want: Ended, targets: 1},
		{name: "paused", sale: "s1", user: "u1", reply: map[string]Reply{"s1": {Outcome: Paused}}, want: Paused, targets: 1},
		{name: "sold out", sale: "s1", user: "u1", reply: map[string]Reply{"s1": {Outcome: SoldOut}}, want: SoldOut, targets: 1},
		{name: "a buyer gets his order", sale: "s1", user: "u1",
			reply: map[string]Reply{"s1": {Outcome: AlreadyBought, OrderID: "o1"}}, want: AlreadyBought, wantOrder: "o1", targets: 1},
		{name: "redis down", sale: "s1", user: "u1", err: errors.New("down"), want: Unavailable, targets: 1},
		{name: "sharded: issued on the user's shard", sale: "s1", user: "u1",
			reply: map[string]Reply{"s1": {Outcome: sharded, Shards: 4}, shard: {Outcome: Issued, Expires: exp}}, want: Issued, targets: 2},
		{name: "require_admission: not admitted", sale: "s1", user: "u1", admission: true, rooms: map[string]bool{"s1": true},
			reply: map[string]Reply{"s1": {Outcome: Issued, Expires: exp}}, want: NotAdmitted, targets: 1},
		{name: "require_admission: admitted", sale: "s1", user: "u1", admission: true, rooms: map[string]bool{"s1": true},
			admitted: map[string]bool{"u1": true}, reply: map[string]Reply{"s1": {Outcome: Issued, Expires: exp}}, want: Issued, targets: 1},
		{name: "require_admission: a sale without a room", sale: "s1", user: "u1", admission: true,
			reply: map[string]Reply{"s1": {Outcome: Issued, Expires: exp}}, want: Issued, targets: 1},
		{name: "a room without require_admission is refused, never issued", sale: "s1", user: "u1", rooms: map[string]bool{"s1": true},
			reply: map[string]Reply{"s1": {Outcome: Issued, Expires: exp}}, want: Misconfigured, targets: 1},
		{name: "require_admission: redis down is never a token", sale: "s1", user: "u1", admission: true,
			rooms: map[string]bool{"s1": true}, admitted: map[string]bool{"u1": true}, err: errors.New("down"), want: Unavailable, targets: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := &fakeStore{reply: c.reply, err: c.err, rooms: c.rooms, admitted: c.admitted}
			core := &Decider{Store: store, Caller: edge.Caller{Timeout: time.Second}, Shards: new(shardcache.Counts),
				Keyring: testRing(t), TTL: time.Minute, LeadTime: time.Minute,
				NewNonce:         func() (string, error) { return "0123456789012345678901", c.nonceErr },
				RequireAdmission: c.admission}
			res, err := core.Issue(context.Background(), Request{Sale: c.sale, User: c.user})
			if res.Outcome != c.want || res.OrderID != c.wantOrder {
				t.Fatalf("result %+v (err %v), want %s %q", res, err, c.want, c.wantOrder)
			}
			if (res.Outcome == Unavailable) != (err != nil) {
				t.Fatalf("err %v with outcome %s", err, res.Outcome)
			}
			if len(store.targets) != c.targets {
				t.Fatalf("script ran on %v, want %d calls", store.targets, c.targets)
			}
			if res.Outcome == Issued {
				cl, err := testRing(t).Verify(res.Token, c.sale, c.user, exp.Add(-time.Second))
				if err != nil || !cl.Expires.Equal(exp) {
					t.Fatalf("the token does not verify with the expiry Redis decided: %+v %v", cl, err)
				}
			}
		})
	}
}

func TestTokenParsesEveryScriptAnswer(t *testing.T) {
	cases := []struct {
		reply []any
		want  Outcome
		ok    bool
	}{
		{[]any{"issued", int64(1_700_000_000_000), int64(1)}, Issued, true},
		{[]any{"issued", int64(0), int64(1)}, "", false},
		{[]any{"already_bought", int64(0), int64(1), "o1"}, AlreadyBought, true},
		{[]any{"already_bought", int64(0), int64(1)}, "", false},
		{[]any{"sold_out", int64(0), int64(1)}, SoldOut, true},
		{[]any{"paused", int64(0), int64(1)}, Paused, true},
		{[]any{"not_admitted", int64(0), int64(1)}, NotAdmitted, true},
		{[]any{"misconfigured", int64(0), int64(1)}, Misconfigured, true},
		{[]any{"room_missing", int64(0), int64(1)}, RoomMissing, true},
		{[]any{"draw_missing", int64(0), int64(1)}, DrawMissing, true},
		{[]any{"not_admitted", int64(0), int64(1), "draw"}, NotAdmitted, true},
		{[]any{"sharded", int64(4), int64(1)}, sharded, true},
		{[]any{"sharded", int64(1), int64(1)}, "", false},
		{[]any{"what", int64(0), int64(1)}, "", false},
		{[]any{"issued", "x", int64(1)}, "", false},
		{[]any{"issued"}, "", false},
	}
	for _, c := range cases {
		r, err := parseReply(c.reply)
		if (err == nil) != c.ok || (c.ok && r.Outcome != c.want) {
			t.Errorf("parseReply(%v) = %+v, %v; want %s ok=%v", c.reply, r, err, c.want, c.ok)
		}
	}
}

func TestEveryTokenOutcomeHasItsStatusAndCode(t *testing.T) {
	want := map[Outcome][2]any{
		Issued: {200, "issued"}, Unauthenticated: {401, contract.CodeUnauthenticated}, BadRequest: {400, contract.CodeBadRequest},
		MethodNotAllowed: {405, contract.CodeBadRequest}, UnknownSale: {404, contract.CodeUnknownSale},
		NotStarted: {403, contract.CodeNotStarted}, Ended: {403, contract.CodeEnded}, Paused: {503, contract.CodePaused},
		AlreadyBought: {409, contract.CodeAlreadyBought}, SoldOut: {409, contract.CodeSoldOut}, Unavailable: {503, contract.CodeUnavailable},
		NotAdmitted: {403, contract.CodeNotAdmitted},
		// A room sale the gateway cannot enforce, or whose room is gone: the client's answer
		// is the contract's 503; the outcome label is the operator's.
		Misconfigured: {503, contract.CodeUnavailable}, RoomMissing: {503, contract.CodeUnavailable},
		// A draw sale reached without its entries: 503 too, never a token around the draw.
		DrawMissing: {503, contract.CodeUnavailable},
		// A room place bound to another device key than the request's proof.
		KeyMismatch: {403, contract.CodeProofKeyMismatch},
	}
	for _, o := range outcomes {
		w, ok := want[o]
		if !ok {
			t.Errorf("outcome %s has no expectation", o)
			continue
		}
		if o.Status() != w[0] || (o != Issued && o.Code() != w[1]) {
			t.Errorf("%s: %d %s, want %v", o, o.Status(), o.Code(), w)
		}
	}
}

// testKey signs the tokens of these tests (the handler's tests use the same one).
var testKey = tokenformat.Key{ID: "k1", Secret: []byte("test-key-0123456789-0123456789-0123456789")}

func testRing(t testing.TB) *tokenformat.Keyring {
	t.Helper()
	kr, err := tokenformat.NewKeyring(testKey)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}
