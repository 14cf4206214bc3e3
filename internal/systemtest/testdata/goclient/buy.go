// Command goclient buys through a client that oapi-codegen generated from docs/openapi.yaml,
// as a Go shop would: TestAGoClientGeneratedFromTheDocumentBuysOnTheRealStack generates the
// client (package main, next to this file), builds the two together and runs the program
// against a gateway and a backend. It uses only what the generator made: the admin client
// creates a sale (its pay_within in seconds) and preheats it, one buyer takes a token, buys,
// is refused a second purchase and polls the order until Postgres has it, and a second buyer
// finds the sale sold out. Each refusal is read by its open `code`. It prints one JSON line,
// the order, and exits 1 on the first surprise.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"time"
)

func main() {
	gateway := flag.String("gateway", "", "the gateway's base URL")
	admin := flag.String("admin", "", "the backend admin listener's base URL")
	token := flag.String("admin-token", "", "an admin token")
	sale := flag.String("sale", "", "the sale to create")
	flag.Parse()
	if err := run(context.Background(), *gateway, *admin, *token, *sale); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
}

// header sets one header on every request of a client (the security schemes: adminToken's
// bearer, userHeader's X-User-ID).
func header(name, value string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set(name, value)
		return nil
	})
}

func run(ctx context.Context, gateway, adminURL, adminToken, sale string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	adm, err := NewClientWithResponses(adminURL, header("Authorization", "Bearer "+adminToken))
	if err != nil {
		return err
	}
	var pay Duration
	if err := pay.FromDuration0(900); err != nil {
		return err
	}
	stock := 1
	now := time.Now().UTC()
	created, err := adm.CreateSaleWithResponse(ctx, CreateSaleJSONRequestBody{
		Id: sale, Stock: &stock, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PayWithin: &pay,
	})
	if err != nil {
		return fmt.Errorf("createSale: %w", err)
	}
	if created.JSON201 == nil {
		return fmt.Errorf("createSale: %s", body(created))
	}
	if created.JSON201.PayWithin != "15m0s" {
		return fmt.Errorf("createSale: pay_within 900 seconds answered %q, want 15m0s", created.JSON201.PayWithin)
	}
	heated, err := adm.PreheatWithResponse(ctx, sale)
	if err != nil || heated.JSON200 == nil || heated.JSON200.StockRedis != 1 {
		return fmt.Errorf("preheat: %v %s", err, body(heated))
	}

	alice, err := NewClientWithResponses(gateway, header("X-User-ID", "alice"))
	if err != nil {
		return err
	}
	tok, err := alice.TokenWithResponse(ctx, sale, &TokenParams{})
	if err != nil || tok.JSON200 == nil {
		return fmt.Errorf("token: %v %s", err, body(tok))
	}
	params := &BuyParams{XSeckillToken: &tok.JSON200.Token}
	bought, err := alice.BuyWithResponse(ctx, sale, params, BuyJSONRequestBody{})
	if err != nil || bought.JSON202 == nil {
		return fmt.Errorf("buy: %v %s", err, body(bought))
	}
	order := bought.JSON202.OrderId
	again, err := alice.BuyWithResponse(ctx, sale, params, BuyJSONRequestBody{})
	if err != nil || again.JSON409 == nil || again.JSON409.Code != "already_bought" || again.JSON409.OrderId == nil || *again.JSON409.OrderId != order {
		return fmt.Errorf("buy again: want 409 already_bought with the order: %v %s", err, body(again))
	}

	var status OrderStatus
	for deadline := time.Now().Add(60 * time.Second); ; {
		st, err := alice.OrderStatusWithResponse(ctx, order)
		if err != nil || st.JSON200 == nil {
			return fmt.Errorf("orderStatus: %v %s", err, body(st))
		}
		if status = st.JSON200.Status; status != OrderStatus("queued") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("order %s still queued after a minute", order)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if status != OrderStatus("created") {
		return fmt.Errorf("order %s is %s, want created", order, status)
	}

	bob, err := NewClientWithResponses(gateway, header("X-User-ID", "bob"))
	if err != nil {
		return err
	}
	late, err := bob.TokenWithResponse(ctx, sale, &TokenParams{})
	if err != nil || late.JSON409 == nil || late.JSON409.Code != "sold_out" {
		return fmt.Errorf("token of a sold-out sale: want 409 sold_out: %v %s", err, body(late))
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]string{"order_id": order, "status": string(status)})
}

// body is an answer's status and body, for an error message (nil: none).
func body[T any, P interface {
	*T
	StatusCode() int
}](r P) string {
	if r == nil {
		return "(no answer)"
	}
	return fmt.Sprintf("%d %s", r.StatusCode(), reflect.ValueOf(r).Elem().FieldByName("Body").Bytes())
}
