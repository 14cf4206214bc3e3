package seckill

import (
	"fmt"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/seckilledge/seckill/internal/version"
)

// Version is the seckill release this module is (internal/version; docs/versioning.md).
const Version = version.Version

// `caddy seckill-version` prints which seckill a Caddy carries, beside `caddy version` (Caddy's
// own) and `caddy build-info` (every module's version as the Go toolchain recorded it).
func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "seckill-version",
		Short: "Prints the version of the seckill modules in this Caddy",
		Long: `
Prints the seckill release these modules are, the seckill module's version as the Go
toolchain recorded it ("(devel)" in a build from a checkout), the commit and the Go version.
'caddy build-info' lists every module's version.`,
		Func: func(caddycmd.Flags) (int, error) {
			fmt.Println(version.Read().String("seckill"))
			return 0, nil
		},
	})
}
