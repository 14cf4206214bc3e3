package identity

import "testing"

func TestHeaderNamesCompareIgnoringCaseAndUnderscores(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"X-User-ID", "x_user_id", true},
		{"X_USER_ID", "X-User-Id", true},
		{"X-User-IDs", "X-User-ID", false},
		{"X-User-IE", "X-User-ID", false},
		{"X.User.ID", "X-User-ID", false},
		{"", "", true},
	} {
		if got := sameHeaderName(c.a, c.b); got != c.same {
			t.Errorf("sameHeaderName(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
