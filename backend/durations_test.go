//go:build integration

package backend_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckilledge/seckill/backend/internal/servicetest"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/testenv"
)

// POST /admin/sales takes every duration (pay_within, room.session, room.prequeue,
// draw.claim_within) as a number of seconds or as a Go duration string, and answers them as Go
// duration strings; a value that is neither, out of range or under the field's minimum is 400
// bad_request naming the field, and creates nothing.
func TestSaleDurationsAreSecondsOrGoStrings(t *testing.T) {
	t.Parallel()
	e := servicetest.New(t)
	srv := e.ControlServer()
	now := time.Now().UTC()
	window := fmt.Sprintf(`"starts_at":%q,"ends_at":%q`, now.Add(time.Hour).Format(time.RFC3339), now.Add(2*time.Hour).Format(time.RFC3339))
	draw := func(claim string) string {
		return fmt.Sprintf(`"per_user_limit":1,"draw":{"opens_at":%q,"closes_at":%q,"claim_within":%s,"beacon":{"off":true}}`,
			now.Add(-time.Minute).Format(time.RFC3339), now.Add(30*time.Minute).Format(time.RFC3339), claim)
	}

	good := []struct {
		fields       string
		pay          string // the answer's pay_within
		session, pre admin.Duration
		claim        admin.Duration
	}{
		{`"pay_within":5400`, "1h30m0s", "", "", ""},
		{`"pay_within":"1h30m"`, "1h30m0s", "", "", ""},
		{`"pay_within":0.5`, "500ms", "", "", ""},
		{`"room":{"session":120,"prequeue":"15m"}`, "15m0s", "2m0s", "15m", ""},
		{`"room":{"session":"2m","prequeue":0}`, "15m0s", "2m", "0s", ""},
		{draw(`600`), "15m0s", "", "", "10m0s"},
		{draw(`"10m"`), "15m0s", "", "", "10m0s"},
	}
	for _, c := range good {
		id := testenv.ID("dur")
		body := fmt.Sprintf(`{"id":%q,"stock":3,%s,%s}`, id, window, c.fields)
		var st admin.SaleStatus
		if code := servicetest.Call(t, srv, "POST", "/admin/sales", servicetest.AliceToken, body, &st); code != http.StatusCreated {
			t.Fatalf("%s: %d", c.fields, code)
		}
		if st.PayWithin != c.pay {
			t.Errorf("%s: pay_within %q, want %q", c.fields, st.PayWithin, c.pay)
		}
		if c.session != "" && (st.Room == nil || st.Room.Session != c.session || st.Room.Prequeue != c.pre) {
			t.Errorf("%s: room %+v, want session %q prequeue %q", c.fields, st.Room, c.session, c.pre)
		}
		if c.claim != "" && (st.Draw == nil || st.Draw.ClaimWithin != c.claim) {
			t.Errorf("%s: draw %+v, want claim_within %q", c.fields, st.Draw, c.claim)
		}
		// What was created is what GET answers.
		var again admin.SaleStatus
		if code := servicetest.Call(t, srv, "GET", "/admin/sales/"+id, servicetest.AliceToken, "", &again); code != 200 || again.PayWithin != c.pay {
			t.Errorf("%s: GET %d pay_within %q", c.fields, code, again.PayWithin)
		}
	}

	bad := []struct{ fields, field string }{
		{`"pay_within":true`, "pay_within"},
		{`"pay_within":{"s":1}`, "pay_within"},
		{`"pay_within":"soon"`, "pay_within"},
		{`"pay_within":0`, "pay_within"},
		{`"pay_within":-60`, "pay_within"},
		{`"pay_within":1e400`, "pay_within"},
		{`"pay_within":1e12`, "pay_within"},
		{`"room":{"session":0.5}`, "session"},
		{`"room":{"session":[1]}`, "session"},
		{`"room":{"prequeue":-1}`, "prequeue"},
		{draw(`0`), "claim_within"},
		{draw(`"1"`), "claim_within"},
		{draw(`false`), "claim_within"},
	}
	for _, c := range bad {
		id := testenv.ID("dur")
		body := fmt.Sprintf(`{"id":%q,"stock":3,%s,%s}`, id, window, c.fields)
		var ref contract.Refusal
		code := servicetest.Call(t, srv, "POST", "/admin/sales", servicetest.AliceToken, body, &ref)
		if code != http.StatusBadRequest || ref.Code != contract.CodeBadRequest || !strings.Contains(ref.Message, c.field) {
			t.Errorf("%s: %d %+v, want 400 bad_request naming %s", c.fields, code, ref, c.field)
		}
		if n := e.DBInt(`SELECT count(*) FROM sales WHERE id = $1`, id); n != 0 {
			t.Errorf("%s: the refused sale was created", c.fields)
		}
	}
}
