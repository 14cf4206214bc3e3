package room

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	_ "github.com/seckilledge/seckill/caddymodule" // the seckill global option
)

// TestCaddyfileAdaptsToTheDocumentedJSON adapts every testdata/adapt/*.caddyfile and compares
// it with the .json next to it (UPDATE_GOLDEN=1 rewrites them).
func TestCaddyfileAdaptsToTheDocumentedJSON(t *testing.T) {
	files, _ := filepath.Glob("testdata/adapt/*.caddyfile")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}.Adapt(in, nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var pretty bytes.Buffer
		_ = json.Indent(&pretty, out, "", "\t")
		pretty.WriteString("\n")
		golden := strings.TrimSuffix(f, ".caddyfile") + ".json"
		if os.Getenv("UPDATE_GOLDEN") == "1" {
			_ = os.WriteFile(golden, pretty.Bytes(), 0o644)
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(pretty.Bytes(), want) {
			t.Errorf("%s adapts to\n%s\nwant\n%s", f, pretty.Bytes(), want)
		}
	}
}

func TestCaddyfileRefusesBadOptions(t *testing.T) {
	for _, in := range []string{
		":80 {\n seckill_room {\n bogus 1\n }\n}",
		":80 {\n seckill_room {\n difficulty 3\n }\n}",
		":80 {\n seckill_room {\n rate fast\n }\n}",
		":80 {\n seckill_room {\n refresh 1s\n }\n}",
		":80 {\n seckill_room extra\n}",
	} {
		if _, _, err := (caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}).Adapt([]byte(in), nil); err == nil {
			t.Errorf("adapting %q succeeded; want an error", in)
		}
	}
}

func TestValidateRefusesImpossibleSettings(t *testing.T) {
	for name, h := range map[string]*Room{
		"zero oversubscribe":  {Oversubscribe: 0.5},
		"inverted difficulty": {Difficulty: []int{10, 5}},
		"difficulty too high": {Difficulty: []int{0, 41}},
		"short session":       {Session: 1},
		"negative rate":       {Rate: -1},
	} {
		h.setDefaults()
		if err := h.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := new(Room)
	ok.setDefaults()
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
}
