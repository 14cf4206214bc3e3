// Command caddy is Caddy with its standard modules plus the seckill modules: the same binary
// `xcaddy build --with github.com/seckilledge/seckill` produces (see xcaddy.json).
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/seckilledge/seckill"
)

func main() {
	caddycmd.Main()
}
