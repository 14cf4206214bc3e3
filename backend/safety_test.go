//go:build integration

package backend_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/orders"

	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/contract"
)

func TestTwoUserIDsAreRefusedNotResolvedToTheFirst(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	sale := e.Sale(2)
	m := e.Accept(sale, 1)[0]
	orderSrv, _ := e.Servers(false)
	req, _ := http.NewRequest("GET", orderSrv.URL+"/orders/"+m.OrderID, nil)
	req.Header.Add("X-User-ID", m.UserID)
	req.Header.Add("X-User-ID", "someone-else")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ref contract.Refusal
	if err := json.NewDecoder(resp.Body).Decode(&ref); err != nil || resp.StatusCode != 400 || ref.Code != contract.CodeBadRequest {
		t.Fatalf("two X-User-ID values: %d %+v (%v), want 400 bad_request", resp.StatusCode, ref, err)
	}
}

func TestEachListenerServesOnlyItsOwnRoutes(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	sale := e.Sale(2)
	m := e.Accept(sale, 1)[0]
	orderSrv, admin := e.Servers(true)
	user := map[string]string{"X-User-ID": m.UserID}
	for _, srv := range []*httptest.Server{orderSrv, admin} {
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("/healthz: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	var ref contract.Refusal
	for _, r := range []struct{ method, path string }{
		{"GET", "/metrics"}, {"POST", "/admin/sales"}, {"GET", "/admin/sales/" + sale},
		{"POST", "/admin/sales/" + sale + "/preheat"}, {"POST", "/admin/sales/" + sale + "/reconcile"},
		{"GET", "/admin/webhooks"}, {"POST", "/shop/orders/" + m.OrderID + "/paid"},
		{"POST", "/baseline/optimistic/" + sale},
	} {
		h := map[string]string{"Authorization": "Bearer " + servicetest.TestAdminToken}
		if code := servicetest.DoJSON(t, r.method, orderSrv.URL+r.path, h, "", &ref); code != 404 || ref.Code != httpapi.CodeNotFound {
			t.Errorf("order listener serves %s %s: %d %+v", r.method, r.path, code, ref)
		}
	}
	if code := servicetest.DoJSON(t, "GET", admin.URL+"/orders/"+m.OrderID, user, "", &ref); code != 404 || ref.Code != httpapi.CodeNotFound {
		t.Errorf("admin listener serves the order API: %d %+v", code, ref)
	}
	var v orders.OrderView
	if code := servicetest.DoJSON(t, "GET", orderSrv.URL+"/orders/"+m.OrderID, user, "", &v); code != 200 || v.Status != contract.StatusQueued {
		t.Errorf("order listener: %d %+v", code, v)
	}
	if code := servicetest.DoJSON(t, "GET", admin.URL+"/admin/sales/"+sale, servicetest.AdminAuth, "", nil); code != 200 {
		t.Errorf("admin listener: %d", code)
	}
	// 405 names the methods that exist.
	req, _ := http.NewRequest("DELETE", orderSrv.URL+"/orders/"+m.OrderID, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("DELETE /orders/{id}: %d Allow=%q %s", resp.StatusCode, resp.Header.Get("Allow"), resp.Header.Get("Content-Type"))
	}
}

// rawExchange sends one raw request on a fresh connection (closing its write side when
// halfClose) and returns the response.
func rawExchange(t *testing.T, addr, raw string, halfClose bool) (*http.Response, []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	if halfClose {
		_ = c.(*net.TCPConn).CloseWrite()
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: no response: %v", raw, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body
}

// Every route of both listeners, fed malformed, truncated and chunked-garbage bodies and odd
// methods, with and without credentials: no 5xx but 503, and every refusal is JSON with a code.
func TestEveryBackendRouteAnswersGarbageWithJSONAndNo5xx(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	sale := e.Sale(3)
	m := e.Accept(sale, 1)[0]
	orderSrv, admin := e.Servers(true)
	oa, aa := strings.TrimPrefix(orderSrv.URL, "http://"), strings.TrimPrefix(admin.URL, "http://")
	type route struct{ addr, method, path string }
	routes := []route{
		{oa, "GET", "/orders/" + m.OrderID}, {oa, "GET", "/healthz"}, {oa, "GET", "/nope"},
		{oa, "POST", "/orders/" + m.OrderID + "/pay"},
		{aa, "POST", "/admin/sales"}, {aa, "GET", "/admin/sales/" + sale},
		{aa, "POST", "/admin/sales/" + sale + "/preheat"}, {aa, "POST", "/admin/sales/" + sale + "/reconcile"},
		{aa, "POST", "/admin/sales/" + sale + "/rebalance"}, {aa, "POST", "/shop/orders/" + m.OrderID + "/paid"},
		{aa, "GET", "/admin/webhooks?state=dead&sale=" + sale}, {aa, "GET", "/admin/webhooks?state=%ff&limit=-1"},
		{aa, "POST", "/admin/webhooks/" + m.OrderID + "/replay"}, {aa, "POST", "/baseline/optimistic/" + sale},
		{aa, "POST", "/baseline/pessimistic/x%20y"}, {aa, "GET", "/healthz"}, {aa, "GET", "/admin/sales/..%2f..%2f"},
	}
	// The public reads of a draw (backend/drawapi), on a closed draw of its own.
	draw := servicetest.DrawReadSale(t, e)
	routes = append(routes, route{oa, "GET", "/seckill/" + draw + "/draw/result"}, route{oa, "GET", "/seckill/" + draw + "/draw/proof"},
		route{oa, "GET", "/seckill/" + draw + "/draw/entries?after=%ff&limit=1e9"}, route{oa, "GET", "/seckill/..%2f/draw/entries?limit=2"})
	bodies := []struct {
		name, headers, body string
		halfClose           bool
	}{
		{"empty", "Content-Length: 0\r\n", "", false},
		{"malformed json", "Content-Type: application/json\r\nContent-Length: 9\r\n", `{"id":[1,`, false},
		{"wrong types", "Content-Type: application/json\r\nContent-Length: 40\r\n", `{"id":7,"stock":"x","starts_at":false}  `, false},
		{"truncated", "Content-Type: application/json\r\nContent-Length: 100\r\n", `{"id":"tr`, true},
		{"chunked garbage", "Transfer-Encoding: chunked\r\n", "zz\r\nnot a chunk\r\n\r\n", true},
		{"huge declared", "Content-Length: 99999999999\r\n", "{}", true},
		{"binary", "Content-Length: 8\r\n", "\x00\xff\xfe\x01\"{[\\", false},
	}
	methods := []string{"", "DELETE", "PUT", "PATCH", "OPTIONS", "PROPFIND", "TRACE"}
	auths := []string{"", "Authorization: Bearer " + servicetest.TestAdminToken + "\r\n", "Authorization: Bearer " + servicetest.TestShopToken + "\r\n"}
	n := 0
	for _, r := range routes {
		for _, method := range methods {
			if method == "" {
				method = r.method
			}
			for _, b := range bodies {
				for _, auth := range auths {
					raw := method + " " + r.path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-User-ID: " + m.UserID + "\r\n" + auth + b.headers + "\r\n" + b.body
					resp, body := rawExchange(t, r.addr, raw, b.halfClose)
					n++
					where := method + " " + r.path + " (" + b.name + ", " + strconv.Quote(auth) + ")"
					if resp.StatusCode >= 500 && resp.StatusCode != 503 {
						t.Errorf("%s: %d %s", where, resp.StatusCode, body)
					}
					if resp.StatusCode < 400 {
						continue
					}
					var ref contract.Refusal
					if err := json.Unmarshal(body, &ref); err != nil || ref.Code == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
						t.Errorf("%s: %d with a body that is not a JSON refusal: %q", where, resp.StatusCode, body)
					}
				}
			}
		}
	}
	t.Logf("%d requests", n)
	if e.Accounted(sale) != 0 {
		t.Fatalf("garbage wrote %d orders into the live sale", e.Accounted(sale))
	}
}
