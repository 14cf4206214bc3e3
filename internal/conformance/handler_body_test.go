package conformance

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/contract"
)

// bodyCases are refusals whose strings need every kind of escaping encoding/json does.
var bodyCases = []handler.Refusal{
	{Code: "sold_out", Message: "sold out"},
	{Code: "already_bought", Message: "you have bought", OrderID: "0190c0de-7e57-7abc-8def-0123456789ab"},
	{Code: "sold_out", Message: "variant gone", Variant: "red-XL_2"},
	{Code: "limit_reached", Message: "limit", Held: 3},
	{Code: "limit_reached", Message: "negative", Held: -2},
	{Code: `q"uo\te`, Message: "<script>&amp;</script>"},
	{Code: "ctl", Message: "\x00\x01\b\f\n\r\t\x1f\x7f end"},
	{Code: "utf8", Message: "héllo wörld 売り切れ 🛒"},
	{Code: "bad", Message: "bad \xff\xfe utf-8 \xe2\x82 cut"},
	{Code: "js", Message: "line\u2028sep\u2029para"},
	{Code: "", Message: "", OrderID: "o<1>", Variant: "v&w"},
}

func jsonBody(t testing.TB, r handler.Refusal) []byte {
	t.Helper()
	b, err := json.Marshal(contract.Refusal{Code: r.Code, Message: r.Message, OrderID: r.OrderID, Variant: r.Variant, Held: r.Held})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The bodies are byte for byte what encoding/json writes for the contract's Refusal: through
// Body (cached or not) and through Write.
func TestBodiesAreEncodingJSONs(t *testing.T) {
	for _, r := range bodyCases {
		want := jsonBody(t, r)
		if got := handler.AppendBody(nil, r); !bytes.Equal(got, want) {
			t.Errorf("AppendBody(%+v) = %s, want %s", r, got, want)
		}
		if got := handler.Body(r); !bytes.Equal(got, want) {
			t.Errorf("Body(%+v) = %s, want %s", r, got, want)
		}
		r.Status = http.StatusConflict
		w := httptest.NewRecorder()
		if err := (handler.Writer{}).Write(w, r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.Body.Bytes(), want) || w.Header().Get("Content-Length") != strconv.Itoa(len(want)) {
			t.Errorf("Write(%+v) = %s (Content-Length %s), want %s", r, w.Body.Bytes(), w.Header().Get("Content-Length"), want)
		}
	}
}

// An already_bought refusal is written without allocating for its body (the pooled buffer).
func TestARefusalWithAnOrderIDBuildsItsBodyWithoutAllocating(t *testing.T) {
	r := handler.Refusal{Code: "already_bought", Message: "you have bought", OrderID: "0190c0de-7e57-7abc-8def-0123456789ab"}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = handler.AppendBody(buf[:0], r) }); n != 0 {
		t.Errorf("AppendBody allocates %v times, want 0", n)
	}
}
