package shop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/seckilledge/seckill/contract"
)

// Errors of Payments.Confirm. Test them with errors.Is.
var (
	// ErrNotPayable: the backend refused (409 not_payable): cancelled, failed, still queued, or
	// past the sale's pay_within.
	ErrNotPayable = errors.New("shop: the order is not payable")
	// ErrUnknownOrder: the backend knows no such order.
	ErrUnknownOrder = errors.New("shop: unknown order")
	// ErrPaymentsOff: no shop token is configured.
	ErrPaymentsOff = errors.New("shop: payments are not configured (SECKILL_SHOP_TOKEN)")
)

// Payments confirms payments to the backend: POST /shop/orders/{id}/paid on its admin
// listener, with a token of role shop (DESIGN.md, "Shop hand-over").
type Payments struct {
	AdminURL string // the backend's admin listener, e.g. http://127.0.0.1:8082
	Token    string // role shop
	Client   *http.Client
}

// Confirm tells the backend that order id is paid. It is idempotent: an order paid already
// answers nil again. The error wraps ErrNotPayable or ErrUnknownOrder with the backend's
// message, or is a transport failure.
func (p *Payments) Confirm(ctx context.Context, id string) error {
	if p.Token == "" {
		return ErrPaymentsOff
	}
	if !contract.ValidID(id) {
		return ErrUnknownOrder
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		strings.TrimRight(p.AdminURL, "/")+"/shop/orders/"+url.PathEscape(id)+"/paid", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.Token)
	resp, err := p.Client.Do(req)
	if err != nil {
		return fmt.Errorf("shop: the backend: %w", err)
	}
	defer resp.Body.Close()
	var body struct {
		Status  string `json:"status"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body)
	switch {
	case resp.StatusCode == http.StatusOK && body.Status == contract.StatusPaid:
		return nil
	case resp.StatusCode == http.StatusConflict:
		return fmt.Errorf("%w: %s", ErrNotPayable, body.Message)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s", ErrUnknownOrder, body.Message)
	}
	return fmt.Errorf("shop: the backend answered %s (%s %s)", resp.Status, body.Code, body.Message)
}
