package lua

import (
	"strings"
	"testing"
)

func TestEveryScriptDocumentsKeysArgvAndReturns(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		src := Source(name)
		header := src
		if i := strings.Index(src, "\nlocal "); i > 0 {
			header = src[:i]
		}
		for _, want := range []string{"KEYS", "ARGV", "Returns"} {
			if !strings.Contains(header, want) {
				t.Errorf("%s.lua: header comment does not mention %s", name, want)
			}
		}
	}
}
