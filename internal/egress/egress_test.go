package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestOnlyAddressesOnThePublicInternetAreAllowed(t *testing.T) {
	for _, tc := range []struct {
		addr string
		kind string // "" : allowed
	}{
		{"93.184.215.14", ""},
		{"8.8.8.8", ""},
		{"2606:4700:4700::1111", ""},
		{"172.32.0.1", ""},  // just past 172.16/12
		{"100.128.0.1", ""}, // just past 100.64/10
		{"169.255.0.1", ""}, // just past 169.254/16
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"}, // IPv4-mapped
		{"64:ff9b::7f00:1", "loopback"},  // NAT64 of 127.0.0.1
		{"64:ff9b::5db8:d70e", ""},       // NAT64 of a public address
		{"2002:7f00:1::1", "loopback"},   // 6to4 of 127.0.0.1
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"100.64.0.1", "shared"},
		{"100.127.255.255", "shared"},
		{"169.254.0.1", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"169.254.169.254", "metadata"},
		{"fd00:ec2::254", "metadata"},
		{"100.100.100.200", "metadata"},
		{"::ffff:169.254.169.254", "metadata"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"ff05::2", "multicast"},
		{"255.255.255.255", "reserved"},
		{"240.0.0.1", "reserved"},
		{"198.18.0.1", "reserved"},
		{"192.0.2.1", "documentation"},
		{"2001:db8::1", "documentation"},
		{"::7f00:1", "reserved"}, // IPv4-compatible
	} {
		err := Check(netip.MustParseAddr(tc.addr))
		var be *BlockedError
		switch {
		case tc.kind == "" && err != nil:
			t.Errorf("%s refused: %v", tc.addr, err)
		case tc.kind != "" && (!errors.As(err, &be) || be.Kind != tc.kind || !errors.Is(err, ErrBlocked)):
			t.Errorf("%s: %v, want a %s refusal", tc.addr, err, tc.kind)
		}
		if Allowed(netip.MustParseAddr(tc.addr)) != (tc.kind == "") {
			t.Errorf("Allowed(%s) disagrees with Check", tc.addr)
		}
	}
	if Allowed(netip.Addr{}) {
		t.Error("the zero Addr is allowed")
	}
}

// fakeResolver answers every name with the same addresses.
type fakeResolver []netip.Addr

func (f fakeResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if len(f) == 0 {
		return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
	}
	return f, nil
}

func TestAURLIsRefusedWhenItsHostIsOrResolvesInside(t *testing.T) {
	public := fakeResolver{netip.MustParseAddr("93.184.215.14")}
	mixed := fakeResolver{netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.7")}
	for _, tc := range []struct {
		url     string
		r       Resolver
		blocked bool
	}{
		{"https://shop.example/hooks", public, false},
		{"https://shop.example/hooks", mixed, true}, // one inside answer is enough
		{"https://nowhere.example/hooks", fakeResolver{}, false},
		{"http://127.0.0.1:8082/admin/sales", public, true}, // a literal is judged as such
		{"http://[::1]:6379/", public, true},
		{"http://[fe80::1%25eth0]/", public, true},
		{"http://169.254.169.254/latest/meta-data/", public, true},
		{"http://[fd00:ec2::254]/", public, true},
		{"https://93.184.215.14/hooks", fakeResolver{}, false},
	} {
		err := CheckURL(context.Background(), tc.r, tc.url)
		if got := errors.Is(err, ErrBlocked); got != tc.blocked {
			t.Errorf("%s: %v, want blocked=%v", tc.url, err, tc.blocked)
		}
	}
}

// Control judges the address actually dialled, after resolution: a dialer with it cannot reach
// a listener on loopback, whatever name led there.
func TestADialerWithControlCannotConnectInside(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := &net.Dialer{Timeout: 2 * time.Second, ControlContext: Control}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, addr := range []string{ln.Addr().String(), "localhost:" + port} {
		c, err := d.DialContext(context.Background(), "tcp", addr)
		if err == nil {
			c.Close()
			t.Fatalf("%s: connected", addr)
		}
		if !errors.Is(err, ErrBlocked) {
			t.Fatalf("%s: %v, want ErrBlocked", addr, err)
		}
	}
}

// An allow list admits what it lists, judged on the address reached
// (IPv4-mapped, NAT64 and 6to4 forms included), and never link-local or metadata addresses,
// whatever it lists.
func TestAnAllowListAdmitsItsPrefixesButNeverMetadataOrLinkLocal(t *testing.T) {
	demo, err := ParseAllow("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		allow []netip.Prefix
		addr  string
		ok    bool
	}{
		{demo, "127.0.0.1", true},
		{demo, "::ffff:127.0.0.1", true}, // the same address
		{demo, "64:ff9b::7f00:1", true},  // NAT64 of it
		{demo, "127.0.0.2", false},
		{demo, "::1", false},
		{demo, "10.0.0.1", false},
		{demo, "93.184.215.14", true}, // public: allowed anyway
		{AllowInside, "10.0.0.1", true},
		{AllowInside, "::1", true},
		{AllowInside, "169.254.169.254", false},
		{AllowInside, "::ffff:169.254.169.254", false},
		{AllowInside, "fd00:ec2::254", false},
		{AllowInside, "100.100.100.200", false},
		{AllowInside, "169.254.10.1", false},
		{AllowInside, "fe80::1", false},
		{AllowInside, "fe80::1%eth0", false},
		{mustAllow(t, "169.254.0.0/16, fe80::/10"), "169.254.169.254", false},
		{mustAllow(t, "169.254.0.0/16, fe80::/10"), "169.254.1.1", false},
		{mustAllow(t, "::ffff:10.0.0.0/104"), "10.1.2.3", true},
		{mustAllow(t, "10.0.0.0/8 fd12::/64"), "fd12::7", true},
	} {
		err := Policy{Allow: tc.allow}.Check(netip.MustParseAddr(tc.addr))
		if (err == nil) != tc.ok {
			t.Errorf("allow %v, %s: %v", tc.allow, tc.addr, err)
		}
		if !tc.ok && !errors.Is(err, ErrBlocked) {
			t.Errorf("allow %v, %s: %v is not ErrBlocked", tc.allow, tc.addr, err)
		}
	}
	// The URL check and the dial check use the same list.
	p := Policy{Allow: demo}
	if err := p.CheckURL(context.Background(), nil, "http://[::ffff:127.0.0.1]:8088/webhooks"); err != nil {
		t.Errorf("a mapped loopback URL with 127.0.0.1/32 allowed: %v", err)
	}
	if err := p.CheckURL(context.Background(), nil, "http://169.254.169.254/latest/meta-data/"); !errors.Is(err, ErrBlocked) {
		t.Errorf("metadata URL with an allow list: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := &net.Dialer{Timeout: 2 * time.Second, ControlContext: p.Control}
	c, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial an allowed receiver: %v", err)
	}
	c.Close()
}

func mustAllow(t *testing.T, s string) []netip.Prefix {
	t.Helper()
	p, err := ParseAllow(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAnAllowListIsCIDRsOrAddresses(t *testing.T) {
	for s, n := range map[string]int{"": 0, "127.0.0.1/32": 1, "127.0.0.1": 1, "10.0.0.0/8,192.168.0.0/16": 2,
		" fd00::/8 , ::1 ": 2, "::ffff:127.0.0.1/128": 1} {
		if p, err := ParseAllow(s); err != nil || len(p) != n {
			t.Errorf("%q: %v %v", s, p, err)
		}
	}
	if p, _ := ParseAllow("::ffff:127.0.0.1/128"); p[0] != netip.MustParsePrefix("127.0.0.1/32") {
		t.Errorf("a mapped prefix is %v, want its IPv4 form", p[0])
	}
	for _, bad := range []string{"10.0.0.1/8", "localhost", "10.0.0.0/33", "fe80::1%eth0", "::ffff:0.0.0.0/64", "0/0"} {
		if p, err := ParseAllow(bad); err == nil {
			t.Errorf("%q accepted as %v", bad, p)
		}
	}
}
