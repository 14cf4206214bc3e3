package orders

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
)

func canonicalBody(t testing.TB) []byte {
	t.Helper()
	b, err := json.Marshal(contract.OrderMessage{OrderID: "0190a0b0-0000-7000-8000-000000000000", SaleID: "sale-1",
		UserID: "user-1", AcceptedAt: time.UnixMilli(1764540000123).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameDecoding fails unless decodeOrder and contract.DecodeOrderMessage agree on body: the same
// message when both accept it, the same error otherwise.
func sameDecoding(t *testing.T, body []byte) {
	t.Helper()
	got, gotErr := decodeOrder(body)
	want, wantErr := contract.DecodeOrderMessage(body)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("%q: error %v, contract decoder says %v", body, gotErr, wantErr)
	}
	if gotErr != nil {
		return
	}
	if got.OrderID != want.OrderID || got.SaleID != want.SaleID || got.UserID != want.UserID ||
		!got.AcceptedAt.Equal(want.AcceptedAt) || got.AcceptedAt.String() != want.AcceptedAt.String() {
		t.Fatalf("%q: decoded %+v, contract decoder says %+v", body, got, want)
	}
}

func TestFastDecoderReadsWhatPublishersSend(t *testing.T) {
	body := canonicalBody(t)
	if _, ok := decodeOrderFast(body); !ok {
		t.Fatalf("the relay's encoding %s is not on the fast path", body)
	}
	sameDecoding(t, body)
}

func TestFastDecoderRejectsMalformedMessagesLikeTheContract(t *testing.T) {
	for _, body := range []string{
		``, `{}`, `[]`, `null`, `{"order_id":"o"}`,
		`{"order_id":"o","sale_id":"s","user_id":"u","accepted_at":"2026-11-30T20:00:00Z"}`,
		`{"order_id":"o","sale_id":"s","user_id":"u","accepted_at":"2026-11-30T20:00:00Z"`,
		`{"order_id":"o","sale_id":"s","user_id":"u","accepted_at":"2026-11-30T20:00:00Z"}x`,
		`{"order_id":"","sale_id":"s","user_id":"u","accepted_at":"2026-11-30T20:00:00Z"}`,
		`{"order_id":"o","sale_id":"a b","user_id":"u","accepted_at":"2026-11-30T20:00:00Z"}`,
		`{"order_id":"o","sale_id":"s","user_id":"","accepted_at":"2026-11-30T20:00:00Z"}`,
		`{"order_id":"o","sale_id":"s","user_id":"u","accepted_at":"yesterday"}`,
		`{"order_id":"o","sale_id":"s","user_id":"u","accepted_at":null}`,
		`{"order_id":"o","sale_id":"s","user_id":"u","accepted_at":"0001-01-01T00:00:00Z"}`,
		`{"order_id":"o","sale_id":"s","user_id":"u","accepted_at":"2026-11-30T20:00:00Z","order_id":""}`,
		`{"order_id":"o","sale_id":"s","user_id":"u","accepted_at":"2026-11-30T20:00:00Z","ORDER_ID":"p"}`,
		`{"order_id":"o","sale_id":"s\u0020x","user_id":"u","accepted_at":"2026-11-30T20:00:00Z"}`,
		`{"order_id":"o", "sale_id":"s","user_id":"u","accepted_at":"2026-11-30T20:00:00+01:00"}`,
		`{"order_id":"o","sale_id":"s","user_id":"u","accepted_at":"2026-11-30T20:00:00Z","extra":1}`,
		`{"order_id":1,"sale_id":"s","user_id":"u","accepted_at":"2026-11-30T20:00:00Z"}`,
	} {
		sameDecoding(t, []byte(body))
	}
}

// The consumer's decoder faces whatever is in the queue: it must agree with the contract's
// decoder on every input, accepting the same messages and refusing the others with the same error.
func FuzzDecodeOrderMatchesContract(f *testing.F) {
	f.Add(canonicalBody(f))
	f.Add([]byte(`{"order_id":"o","sale_id":"s","user_id":"u","accepted_at":"2026-11-30T20:00:00.5+01:00"}`))
	f.Add([]byte(`{"order_id":"o","sale_id":"s","user_id":"u","accepted_at":"2026-11-30T20:00:00Z","order_id":""}`))
	f.Add([]byte(`{"Order_ID":"o","sale_id":"s","user_id":"u","accepted_at":"2026-11-30T20:00:00Z"}`))
	f.Add([]byte(`{"order_id":"o","sale_id":"s","user_id":"u","accepted_at":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		sameDecoding(t, body)
	})
}

func BenchmarkDecodeOrder(b *testing.B) {
	body := canonicalBody(b)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeOrder(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := contract.DecodeOrderMessage(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
