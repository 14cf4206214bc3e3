//go:build integration

package room

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckilledge/seckill/caddymodule/botcheck/botcheckcaddy"
	"github.com/seckilledge/seckill/internal/testenv"
)

// The cost of an entry (POST /queue, one gateway in this process) without a challenge
// provider and with one (Turnstile through a stand-in siteverify on loopback: the round trip
// and the form, not a real provider's latency). A poll's cost is unchanged by the provider: it
// never asks it (TestARoomWithAChallengeProviderChecksEachEntryOnceAndNoPoll counts the calls);
// `seckill-bench room -only poll` measures it.
//
//	go test -tags integration -run '^$' -bench BenchmarkEntryCost -benchtime 2000x ./caddymodule/room/
func BenchmarkEntryCost(b *testing.B) {
	rdb := testenv.Redis(b)
	for _, provider := range []string{"none", "turnstile"} {
		b.Run(provider, func(b *testing.B) {
			// The provider's gateway is botcheckGateway's, whose stand-in passes "good".
			g := plainGateway
			headers := map[string]string{}
			if provider != "none" {
				g = botcheckGateway
				headers[botcheckcaddy.Header] = "good"
			}
			gw := g.Base(b)
			calls := int64(0)
			if provider != "none" {
				calls = botcheckSiteverify.Calls.Load()
			}
			r := newRoom(b, rdb, 1000, -time.Second, time.Hour, roomArgs{Rate: "1", Oversubscribe: "1", SessionMS: "60000"})
			b.ResetTimer()
			for i := range b.N {
				if got := enter(b, gw, r.Sale, fmt.Sprintf("u%d", i), headers); got.Status != http.StatusOK {
					b.Fatalf("entry: %d %s", got.Status, got.Raw)
				}
			}
			b.StopTimer()
			if provider != "none" && botcheckSiteverify.Calls.Load()-calls != int64(b.N) {
				b.Fatalf("%d siteverify calls for %d entries", botcheckSiteverify.Calls.Load()-calls, b.N)
			}
		})
	}
}
