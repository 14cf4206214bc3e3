package stackenv

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The defaults live twice: here and in scripts/stack.sh, which starts the services and writes
// .run/env. A port moved in one place only would send every test to a server that is not there.
func TestDefaultsAreTheOnesStackShWrites(t *testing.T) {
	b, err := os.ReadFile("../../scripts/stack.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := string(b)
	ports := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+_PORT)="\$\{SECKILL_[A-Z_]+_PORT:-(\d+)\}"`).FindAllStringSubmatch(script, -1) {
		ports[m[1]] = m[2]
	}
	// The URLs stack.sh exports, with its port variables replaced by their defaults.
	exported := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^export (SECKILL_[A-Z_]+)=(\S+)$`).FindAllStringSubmatch(script, -1) {
		v := m[2]
		for name, port := range ports {
			v = strings.ReplaceAll(v, "$"+name, port)
		}
		exported[m[1]] = v
	}
	for name, want := range map[string]string{
		RedisAddrVar: DefaultRedisAddr, AMQPURLVar: DefaultAMQPURL, AMQPMgmtURLVar: DefaultAMQPMgmtURL,
		PGURLVar: DefaultPGURL, PGAdminURLVar: DefaultPGAdminURL,
	} {
		if exported[name] != want {
			t.Errorf("stack.sh exports %s=%q, stackenv's default is %q", name, exported[name], want)
		}
	}
	if want := "127.0.0.1:" + ports["REDIS_PORT"]; DefaultRedisAddr != want {
		t.Errorf("DefaultRedisAddr = %q, stack.sh's Redis is %q", DefaultRedisAddr, want)
	}
	if DefaultEPMDPort != ports["EPMD_PORT"] {
		t.Errorf("DefaultEPMDPort = %q, stack.sh's epmd is %q", DefaultEPMDPort, ports["EPMD_PORT"])
	}
}

func TestGetPrefersTheEnvironment(t *testing.T) {
	t.Setenv(RedisAddrVar, "10.0.0.1:6379")
	if RedisAddr() != "10.0.0.1:6379" {
		t.Fatalf("RedisAddr() = %q, want the environment's", RedisAddr())
	}
	t.Setenv(RedisAddrVar, "")
	if RedisAddr() != DefaultRedisAddr {
		t.Fatalf("RedisAddr() = %q with the variable empty, want the default", RedisAddr())
	}
}
