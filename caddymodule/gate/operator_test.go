//go:build integration

package gate

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The operator's pause (meta state = paused, what the backend's pause writes) stops the gate
// on its next request, with 503 paused and Retry-After; lifting it sells again.
func TestGateAnswersPausedWhileTheOperatorPausedTheSale(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	base := startCaddy(t, newGatewayConfig(t, testenv.RabbitVhost(t)))
	sale := newSale(t, rdb, 5, -time.Minute, time.Hour)
	rdb.HSet(ctx, contract.MetaKey(sale), contract.FieldState, contract.StatePaused)
	if a := buy(t, base, sale, "u1", ""); a.Status != http.StatusServiceUnavailable || a.Code != contract.CodePaused || a.Retry == "" {
		t.Fatalf("paused: %+v; want 503 paused with Retry-After", a)
	}
	if got := stockOf(t, rdb, sale); got != 5 {
		t.Fatalf("stock %d after a purchase while paused, want 5", got)
	}
	rdb.HDel(ctx, contract.MetaKey(sale), contract.FieldState)
	if a := buy(t, base, sale, "u1", ""); a.Status != http.StatusAccepted {
		t.Fatalf("resumed: %+v; want 202", a)
	}
}

// After sell-out a buyer is told his order, not "sold out", though the answer to everybody
// else still comes from the sold-out memory.
func TestGateTellsABuyerHisOrderAfterSellOut(t *testing.T) {
	rdb := testenv.Redis(t)
	base := startCaddy(t, newGatewayConfig(t, testenv.RabbitVhost(t)))
	sale := newSale(t, rdb, 1, -time.Minute, time.Hour)
	won := buy(t, base, sale, "winner", "")
	if won.Status != http.StatusAccepted {
		t.Fatalf("winner: %+v", won)
	}
	if a := buy(t, base, sale, "loser", ""); a.Code != contract.CodeSoldOut {
		t.Fatalf("loser: %+v; want sold_out", a)
	}
	a := buy(t, base, sale, "winner", "")
	if a.Status != http.StatusConflict || a.Code != contract.CodeAlreadyBought || a.OrderID != won.OrderID {
		t.Fatalf("the winner again after sell-out: %+v; want already_bought with %s", a, won.OrderID)
	}
}

// /seckill/a/../b/buy matches the routes of sale b while the sale placeholder reads a: the
// request is refused, nothing is sold in either sale.
func TestGateRefusesAPathThatNamesTwoSales(t *testing.T) {
	rdb := testenv.Redis(t)
	cfg := newGatewayConfig(t, testenv.RabbitVhost(t))
	startCaddy(t, cfg)
	a, b := newSale(t, rdb, 5, -time.Minute, time.Hour), newSale(t, rdb, 5, -time.Minute, time.Hour)
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", cfg.Port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "POST /seckill/%s/../%s/buy HTTP/1.1\r\nHost: gw\r\nX-User-ID: u1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", a, b)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body.String(), contract.CodeBadRequest) {
		t.Fatalf("%d %s; want 400 bad_request", resp.StatusCode, body.String())
	}
	if stockOf(t, rdb, a) != 5 || stockOf(t, rdb, b) != 5 {
		t.Fatal("a purchase went through a path naming two sales")
	}
}
