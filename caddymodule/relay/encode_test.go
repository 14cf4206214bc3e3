package relay

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckilledge/seckill/contract"
)

// The relay's encoder must write exactly what json.Marshal writes (the contract's message), for
// any message, including the ones it leaves to json.Marshal.
func FuzzMarshalOrderMatchesJSON(f *testing.F) {
	f.Add("0190a0b0-0000-7000-8000-000000000000", "sale-1", "user_1", int64(1764540000123000000), "")
	f.Add(`a"b\c`, "<s>", "u&1", int64(0), "+05:30")
	f.Add("\x00\xff", "é", "u", int64(-62135596800000000), "UTC")
	f.Fuzz(func(t *testing.T, order, sale, user string, nanos int64, zone string) {
		at := time.Unix(0, nanos).UTC()
		if zone != "" {
			if z, err := time.Parse("-07:00", zone); err == nil {
				at = at.In(z.Location())
			}
		}
		m := contract.OrderMessage{OrderID: order, SaleID: sale, UserID: user, AcceptedAt: at}
		got, gotErr := marshalOrder(m)
		want, wantErr := json.Marshal(m)
		if (gotErr == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("marshalOrder(%+v) = %s, %v; json.Marshal: %s, %v", m, got, gotErr, want, wantErr)
		}
	})
}

func TestRelayEncodesAnOutboxEntryAsTheContractMessage(t *testing.T) {
	body, order, err := encodeEntry("sale-1", redis.XMessage{ID: "1-0", Values: map[string]any{
		"o": "0190a0b0-0000-7000-8000-000000000000", "u": "user-1", "t": "1764540000123"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := contract.DecodeOrderMessage(body)
	if err != nil || order != m.OrderID || m.SaleID != "sale-1" || m.UserID != "user-1" || m.AcceptedAt.UnixMilli() != 1764540000123 {
		t.Fatalf("%s decodes to %+v, %v", body, m, err)
	}
}

func BenchmarkEncodeEntry(b *testing.B) {
	m := redis.XMessage{ID: "1-0", Values: map[string]any{"o": "0190a0b0-0000-7000-8000-000000000000", "u": "user-1", "t": "1764540000123"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := encodeEntry("sale-1", m); err != nil {
			b.Fatal(err)
		}
	}
}

// The same equivalence for the messages of a sale with variants or a limit: variant, quantity
// and seq (any int, also ones Validate refuses: marshalOrder does not validate).
func FuzzMarshalVariantOrderMatchesJSON(f *testing.F) {
	f.Add("0190a0b0-0000-7000-8000-000000000000", "sale-1", "user_1", int64(1764540000123000000), "red-42", 2, 3)
	f.Add("o", "s", "u", int64(0), "", 0, 0)
	f.Add("o", "s", "u", int64(1), `a"<b>`, -1, 1<<40)
	f.Add("o", "s", "u", int64(1), "é", 1000, -7)
	f.Fuzz(func(t *testing.T, order, sale, user string, nanos int64, variant string, quantity, seq int) {
		m := contract.OrderMessage{OrderID: order, SaleID: sale, UserID: user, AcceptedAt: time.Unix(0, nanos).UTC(),
			Variant: variant, Quantity: quantity, SeqNo: seq}
		got, gotErr := marshalOrder(m)
		want, wantErr := json.Marshal(m)
		if (gotErr == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("marshalOrder(%+v) = %s, %v; json.Marshal: %s, %v", m, got, gotErr, want, wantErr)
		}
	})
}

// A single-stock sale's entry (o, u, t) keeps exactly the message it always had; an entry of a
// sale with variants carries variant, quantity and seq; a malformed q or n is refused.
func TestRelayEncodesVariantEntries(t *testing.T) {
	base := map[string]any{"o": "0190a0b0-0000-7000-8000-000000000000", "u": "user-1", "t": "1764540000123"}
	body, _, err := encodeEntry("sale-1", redis.XMessage{ID: "1-0", Values: base})
	want := `{"order_id":"0190a0b0-0000-7000-8000-000000000000","sale_id":"sale-1","user_id":"user-1","accepted_at":"2025-11-30T22:00:00.123Z"}`
	if err != nil || string(body) != want {
		t.Fatalf("single-stock body %s, %v; want %s", body, err, want)
	}
	with := func(kv ...string) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	body, _, err = encodeEntry("sale-1:3", redis.XMessage{ID: "1-0", Values: with("v", "red", "q", "2", "n", "3")})
	m, derr := contract.DecodeOrderMessage(body)
	if err != nil || derr != nil || m.SaleID != "sale-1" || m.Variant != "red" || m.Units() != 2 || m.Seq() != 3 {
		t.Fatalf("variant body %s (%v, %v) decodes to %+v", body, err, derr, m)
	}
	for _, bad := range []map[string]any{with("q", "0"), with("q", "x"), with("n", "-1"), with("q", "1001"), with("v", "a b")} {
		if _, _, err := encodeEntry("sale-1", redis.XMessage{ID: "1-0", Values: bad}); err == nil {
			t.Errorf("entry %v encoded", bad)
		}
	}
}
