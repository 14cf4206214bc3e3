//go:build integration

package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runScript runs scripts/run.sh with its run directory in dir.
func runScript(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"../scripts/run.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "SECKILL_RUN_DIR="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("run.sh %v: %v\n%s%s", args, err, out.String(), errb.String())
	}
	return out.String()
}

func exported(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok && strings.HasPrefix(line, "export ") {
			if _, dup := m[k]; dup {
				t.Errorf("%s exports %s twice", path, k)
			}
			m[k] = v
		}
	}
	return m
}

// make run makes its own random secrets once, keeps them across runs (even though
// scripts/stack.sh rewrites .run/env on every start), keeps them private, and never falls
// back to a published value.
func TestRunMakesRandomSecretsOnceAndKeepsThem(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "env")
	stackEnv := "export SECKILL_REDIS_ADDR=127.0.0.1:16379\n"
	if err := os.WriteFile(env, []byte(stackEnv), 0o644); err != nil {
		t.Fatal(err)
	}
	runScript(t, dir, "secrets")
	first := exported(t, env)
	hex := regexp.MustCompile(`^[0-9a-f]+$`)
	if k := first["SECKILL_TOKEN_KEY"]; len(k) != 64 || !hex.MatchString(k) {
		t.Fatalf("token key %q: want 32 random bytes in hex", k)
	}
	if a := first["SECKILL_ADMIN_TOKEN"]; len(a) != 48 || !hex.MatchString(a) {
		t.Fatalf("admin token %q: want 24 random bytes in hex", a)
	}
	if first["SECKILL_REDIS_ADDR"] == "" {
		t.Fatal("the stack's variables were lost")
	}
	for _, f := range []string{env, filepath.Join(dir, "secrets.env")} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is readable by others: %v", f, st.Mode())
		}
	}

	// The stack rewrites .run/env on its next start; the next run puts the same secrets back.
	if err := os.WriteFile(env, []byte(stackEnv), 0o644); err != nil {
		t.Fatal(err)
	}
	runScript(t, dir, "secrets")
	runScript(t, dir, "secrets")
	again := exported(t, env)
	if again["SECKILL_TOKEN_KEY"] != first["SECKILL_TOKEN_KEY"] || again["SECKILL_ADMIN_TOKEN"] != first["SECKILL_ADMIN_TOKEN"] {
		t.Fatalf("the secrets changed between runs: %v then %v", first, again)
	}

	// Another checkout gets other secrets.
	other := t.TempDir()
	runScript(t, other, "secrets")
	if exported(t, filepath.Join(other, "env"))["SECKILL_TOKEN_KEY"] == first["SECKILL_TOKEN_KEY"] {
		t.Fatal("two run directories got the same token key")
	}

	// No published default is left anywhere make run reads.
	script, err := os.ReadFile("../scripts/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, demo := range []string{"demo-admin-token", "demo-token-key"} {
		if bytes.Contains(script, []byte(demo)) {
			t.Errorf("scripts/run.sh still holds the published %q", demo)
		}
	}
}

// stackEnvFile runs the part of scripts/stack.sh start that writes .run/env (its env-file
// command), with its run directory in dir.
func stackEnvFile(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("bash", "../scripts/stack.sh", "env-file")
	cmd.Env = append(os.Environ(), "SECKILL_RUN_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("stack.sh env-file: %v\n%s", err, out)
	}
}

// sourced is what a shell has after `source <dir>/env`: the README's way to get the admin token.
func sourced(t *testing.T, dir, name string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", `set -eu; source "$1/env"; printf %s "${!2:-}"`, "sourced", dir, name)
	cmd.Env = os.Environ()
	for _, v := range []string{"SECKILL_TOKEN_KEY", "SECKILL_ADMIN_TOKEN", "SECKILL_REDIS_ADDR"} {
		cmd.Env = append(cmd.Env, v+"=") // only the file may set them
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("source %s/env: %v", dir, err)
	}
	return string(out)
}

// make run (the stack writes .run/env, run.sh adds the secrets) then make test (the stack starts
// again and rewrites .run/env): sourcing .run/env must still give the admin token and the token
// key of make run, beside the stack's variables, each once, in a file only its owner reads.
func TestMakeTestKeepsTheSecretsOfMakeRun(t *testing.T) {
	// make test's start writes .run/env the way env-file does, or this test proves nothing.
	script, err := os.ReadFile("../scripts/stack.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?s)\nstart\)\n[^;]*\n\twrite_env\n\t;;`).Match(script) {
		t.Fatal("scripts/stack.sh start no longer writes .run/env with write_env")
	}

	dir := t.TempDir()
	env := filepath.Join(dir, "env")
	stackEnvFile(t, dir)         // make run: the stack ...
	runScript(t, dir, "secrets") // ... then run.sh's secrets
	secrets := exported(t, filepath.Join(dir, "secrets.env"))
	admin, key := secrets["SECKILL_ADMIN_TOKEN"], secrets["SECKILL_TOKEN_KEY"]
	if admin == "" || key == "" {
		t.Fatalf("run.sh made no secrets: %v", secrets)
	}
	for i, step := range []string{"make test", "make test again", "make run again", "make test after it"} {
		if step == "make run again" {
			runScript(t, dir, "secrets")
		} else {
			stackEnvFile(t, dir)
		}
		got := exported(t, env) // fails on a variable exported twice
		if got["SECKILL_REDIS_ADDR"] == "" {
			t.Fatalf("after %s: the stack's variables are missing from .run/env", step)
		}
		if a, k := sourced(t, dir, "SECKILL_ADMIN_TOKEN"), sourced(t, dir, "SECKILL_TOKEN_KEY"); a != admin || k != key {
			t.Fatalf("step %d, after %s: sourcing .run/env gives admin token %q and token key %q, want make run's %q and %q",
				i, step, a, k, admin, key)
		}
		st, err := os.Stat(env)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Fatalf("after %s: .run/env holds the secrets and is readable by others: %v", step, st.Mode())
		}
	}

	// Before any make run there are no secrets, and the stack writes its variables alone.
	fresh := t.TempDir()
	stackEnvFile(t, fresh)
	if got := exported(t, filepath.Join(fresh, "env")); got["SECKILL_ADMIN_TOKEN"] != "" || got["SECKILL_REDIS_ADDR"] == "" {
		t.Fatalf("a stack without make run wrote %v", got)
	}
}
