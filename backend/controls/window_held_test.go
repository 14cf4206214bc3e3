//go:build integration

package controls_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
)

// Moving a sale's end moves the expiry of its users' held units with it: otherwise a sale with
// a per-user limit whose end was pushed past the old retention would forget what its buyers
// hold while it still sells, and let them buy over the limit.
func TestMovingTheEndMovesTheHeldUnitsExpiryToo(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	ctx := context.Background()
	srv := e.ControlServer()
	sale := e.VariantSale(2, backend.VariantSpec{ID: "red", Stock: 5})
	if _, reply, ok := e.Buy(sale, "alice", "red", 1); !ok {
		t.Fatalf("purchase refused: %v", reply)
	}
	want := time.Now().Add(48 * time.Hour).Truncate(time.Second).UTC()
	var res admin.ControlResult
	if code := servicetest.Call(t, srv, "PATCH", "/admin/sales/"+sale, servicetest.AliceToken, `{"ends_at":"`+want.Format(time.RFC3339)+`"}`, &res); code != 200 {
		t.Fatalf("PATCH: %d %+v", code, res)
	}
	wantMS := want.UnixMilli() + e.Svc.Sales.RetentionOrDefault().Milliseconds()
	for _, key := range []string{contract.MetaKey(sale), contract.BuyersKey(sale), contract.HeldKey(sale)} {
		if exp := e.Redis.PExpireTime(ctx, key).Val(); exp.Milliseconds() != wantMS {
			t.Errorf("%s expires at %d, want the new end + retention %d", key, exp.Milliseconds(), wantMS)
		}
	}
}
