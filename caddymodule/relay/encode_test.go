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
