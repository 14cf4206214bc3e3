//go:build integration

package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/testenv"
)

// A path under /orders/ that is not in canonical form (a dot segment, an empty segment, an
// encoded slash) is the gateway's 400 bad_request, as seckill_gate answers for /seckill/ paths:
// Caddy's routes match the cleaned path while the proxy sends it as written, so
// /orders/..%2fhealthz was answered by the /healthz route and /orders//<id> reached the backend
// as written. The same order path in canonical form still reaches the backend (its 404
// unknown_order), as does an encoded slash in the query.
func canonicalOrders(t *testing.T, g *gateway, production bool) {
	order := uuid.NewString()
	get := func(path string) (int, []byte) {
		t.Helper()
		user := testenv.ID("u")
		id := "X-User-ID: " + user + "\r\n"
		if production {
			id = "Cookie: session=" + g.Shop.signIn(user) + "\r\n"
		}
		raw := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: gw\r\nConnection: close\r\nX-Forwarded-For: %s\r\n%s\r\n", path, newIP(), id)
		out, err := rawExchange(hostPort(g.Base), []byte(raw), 20*time.Second)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
		if err != nil {
			t.Fatalf("GET %s: unparsable answer %q", path, out)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	for _, path := range []string{
		"/orders/..%2fhealthz", "/orders/..%2Fhealthz", "/orders/%2e%2e/healthz", "/orders/%2E%2E%2Fhealthz",
		"/orders/x/..%2f..%2fhealthz", "/ORDERS/..%2fhealthz", "/orders/.%2e/healthz",
		"/orders//" + order, "/orders/./" + order, "/orders/x/../" + order, "/orders/" + order + "/.",
		"/orders/" + order + "/..", "//orders/" + order, "/x/../orders/" + order, "/orders/x%2f..%2f" + order,
		"/orders/" + order + "%2fpay", "/orders/" + order + "%5cpay", "/orders/" + order + "//pay",
	} {
		status, body := get(path)
		var ref contract.Refusal
		if status != http.StatusBadRequest || json.Unmarshal(body, &ref) != nil || ref.Code != contract.CodeBadRequest ||
			!strings.Contains(ref.Message, "canonical") {
			t.Errorf("GET %s: %d %q, want the gateway's 400 bad_request (not in canonical form)", path, status, body)
		}
	}
	for _, path := range []string{"/orders/" + order, "/orders/" + order + "?next=%2f..%2fhealthz"} {
		status, body := get(path)
		var ref contract.Refusal
		if status != http.StatusNotFound || json.Unmarshal(body, &ref) != nil || ref.Code != contract.CodeUnknownOrder {
			t.Errorf("GET %s: %d %q, want the backend's 404 unknown_order", path, status, body)
		}
	}
	if status, body := get("/healthz"); status != http.StatusOK || string(body) != "ok" {
		t.Errorf("GET /healthz: %d %q", status, body)
	}
}
