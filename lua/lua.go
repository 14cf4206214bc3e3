// Package lua embeds the Redis Lua scripts of the flash-sale edge, one file per script, and
// exposes them as go-redis Script values (EVALSHA, falling back to EVAL on NOSCRIPT).
//
// Every script starts with a header comment that lists its KEYS, ARGV and return values; a
// test holds every file to that. All keys a script touches share one hash tag, so each script
// runs unchanged on Redis Cluster.
package lua

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed *.lua
var files embed.FS

var scripts = func() map[string]*redis.Script {
	m := map[string]*redis.Script{}
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		src, err := files.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		m[strings.TrimSuffix(e.Name(), ".lua")] = redis.NewScript(string(src))
	}
	return m
}()

// Script returns the embedded script name (the file name without ".lua"). It panics when no
// such file is embedded: script names are constants of the program, not input.
func Script(name string) *redis.Script {
	s, ok := scripts[name]
	if !ok {
		panic(fmt.Sprintf("lua: no embedded script %q", name))
	}
	return s
}

// Source returns the text of the embedded script name.
func Source(name string) string {
	b, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("lua: no embedded script %q", name))
	}
	return string(b)
}

// Names lists the embedded scripts, sorted.
func Names() []string {
	names := make([]string, 0, len(scripts))
	for n := range scripts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
