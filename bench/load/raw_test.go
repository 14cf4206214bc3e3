package load

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The raw client must read every framing net/http servers produce, and agree with net/http.
func TestRawClientReadsEveryResponseFramingLikeNetHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"code":`)
			w.(http.Flusher).Flush() // forces chunked encoding
			fmt.Fprint(w, `"sold_out","message":"m"}`)
		case "/close":
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"order_id":"o1","status":"queued"}`)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			if r.Header.Get("X-User-ID") != "alice" || r.Method != http.MethodPost {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, `{"token":"t"}`)
		}
	}))
	defer srv.Close()
	raw := NewRaw(4)
	defer raw.Close()
	ref := NetHTTP{Client: NewHTTPClient(4)}
	h := http.Header{}
	h.Set("X-User-ID", "alice")
	for i := 0; i < 3; i++ { // again and again: connections are reused or replaced correctly
		for _, path := range []string{"/chunked", "/close", "/empty", "/token"} {
			req := Request{Method: http.MethodPost, URL: srv.URL + path, Header: h}
			a, b := raw.Do(context.Background(), req), ref.Do(context.Background(), req)
			if a.Err != nil || a.Status != b.Status || a.Outcome != b.Outcome || a.OrderID != b.OrderID || string(a.Body) != string(b.Body) {
				t.Fatalf("%s: raw %d %s %q (%v), net/http %d %s %q", path, a.Status, a.Outcome, a.Body, a.Err, b.Status, b.Outcome, b.Body)
			}
		}
	}
}

func TestRawClientReportsARefusedConnectionAsAnError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	if r := NewRaw(1).Do(context.Background(), Request{URL: url}); r.Outcome != "error" || r.Err == nil {
		t.Fatalf("outcome %s, err %v", r.Outcome, r.Err)
	}
}
