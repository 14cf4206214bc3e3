package rabbitmgmt

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestQueuePathEscapesTheDefaultVhost(t *testing.T) {
	if got := QueuePath("", "seckill.orders"); got != "/api/queues/%2F/seckill.orders" {
		t.Fatalf("QueuePath = %q", got)
	}
	if got := QueuePath("t-1", "a/b"); got != "/api/queues/t-1/a%2Fb" {
		t.Fatalf("QueuePath = %q", got)
	}
}

// A fake of the API's HTTP surface: the real API is exercised by testenv's tests.
func TestClientAuthenticatesDecodesAndMapsNotFound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "alice" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.EscapedPath() {
		case "/api/queues/v1/q":
			_, _ = w.Write([]byte(`{"name":"q","type":"quorum","durable":true,"messages":7,"arguments":{"x-delivery-limit":5}}`))
		case "/api/vhosts/gone":
			w.WriteHeader(http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("broken"))
		}
	}))
	defer srv.Close()
	c, err := New(strings.Replace(srv.URL, "http://", "http://alice:s3cret@", 1))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.String(), "s3cret") {
		t.Fatalf("String() leaks the password: %s", c)
	}
	ctx := context.Background()
	q, err := c.Queue(ctx, "v1", "q")
	if err != nil || q.Type != "quorum" || q.Messages != 7 || q.Arguments["x-delivery-limit"] != float64(5) {
		t.Fatalf("Queue = %+v, %v", q, err)
	}
	if ok, err := c.VhostExists(ctx, "gone"); ok || err != nil {
		t.Fatalf("VhostExists(gone) = %v, %v; want false, nil", ok, err)
	}
	if err := c.DeleteVhost(ctx, "gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("DeleteVhost(gone) = %v, want ErrNotFound", err)
	}
	if _, err := c.Do(ctx, http.MethodGet, "/api/other", nil); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("a 500 gave %v, want an error quoting the body", err)
	}
	if _, err := New("localhost:15672"); err == nil {
		t.Fatal("a URL without scheme was accepted")
	}
}
