package backend

import (
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/seckilledge/seckill/contract"
)

// The admin listener's host guard (listen.go), on a handler alone.

func TestTheAdminListenerRefusesAForeignHost(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	try := func(names []string, host string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		hostGuard(names, ok).ServeHTTP(rec, req)
		return rec
	}
	// The defaults: the listen host and loopback names, with the bound port.
	names, err := AdminHostNames("", "10.0.0.5:0", "10.0.0.5:8082")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"10.0.0.5:8082", "127.0.0.1:8082", "localhost:8082", "LOCALHOST:8082", "[::1]:8082"} {
		if rec := try(names, h); rec.Code != 204 {
			t.Errorf("Host %s: %d, want served", h, rec.Code)
		}
	}
	for _, h := range []string{"evil.example:8082", "rebind.evil.example", "localhost:9999", "127.0.0.1", ""} {
		rec := try(names, h)
		if rec.Code != http.StatusMisdirectedRequest || hostRefusalCode(t, rec) != "unknown_host" {
			t.Errorf("Host %q: %d %s, want 421 unknown_host", h, rec.Code, rec.Body)
		}
	}
	// A wildcard listen host is no name.
	if names, _ := AdminHostNames("", "0.0.0.0:8082", "0.0.0.0:8082"); try(names, "0.0.0.0:8082").Code != 421 || try(names, "127.0.0.1:8082").Code != 204 {
		t.Errorf("wildcard defaults %v", names)
	}
	// SECKILL_ADMIN_HOSTS replaces the defaults; a name without a port matches any port.
	t.Setenv("SECKILL_ADMIN_HOSTS", "backend:8082, Admin.Internal")
	cfg, err := ConfigFromFlags(flag.NewFlagSet("t", flag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	names, err = AdminHostNames(cfg.AdminHosts, cfg.AdminListen, "127.0.0.1:8082")
	if err != nil {
		t.Fatal(err)
	}
	for h, want := range map[string]int{"backend:8082": 204, "admin.internal:443": 204, "backend:9000": 421, "127.0.0.1:8082": 421} {
		if rec := try(names, h); rec.Code != want {
			t.Errorf("SECKILL_ADMIN_HOSTS, Host %s: %d, want %d", h, rec.Code, want)
		}
	}
	if _, err := AdminHostNames("http://backend:8082/", "", "127.0.0.1:8082"); err == nil {
		t.Error("a URL accepted as a host name")
	}
}

func hostRefusalCode(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var ref contract.Refusal
	if err := json.Unmarshal(rec.Body.Bytes(), &ref); err != nil {
		t.Fatalf("refusal %d is not JSON: %q", rec.Code, rec.Body)
	}
	return ref.Code
}
