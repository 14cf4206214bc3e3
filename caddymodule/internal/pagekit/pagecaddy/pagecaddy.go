// Package pagecaddy reads a handler's `page` block of the Caddyfile into a pagekit.Config
// (the kit itself imports no Caddy):
//
//	page {
//		template      <file>            # the shop's html/template page, per site
//		messages      <file|dir...>     # the shop's catalogues: <language>.json files
//		lang          <tag>             # one language for every buyer (default: ?lang=, then Accept-Language)
//		image_sources <source...>       # the CSP's img-src (the shop's logo); default none
//		sale <id> {                     # one sale's own page
//			template <file>
//			lang     <tag>
//		}
//	}
package pagecaddy

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/internal/pagekit"
)

// Unmarshal reads the block after `page` (d at the option's name) into c.
func Unmarshal(d *caddyfile.Dispenser, c *pagekit.Config) error {
	return handler.ParseBlock(d, "page", func(name string) (bool, error) {
		switch name {
		case "template":
			return true, handler.StringArg(d, &c.Template)
		case "lang":
			return true, handler.StringArg(d, &c.Lang)
		case "messages":
			c.Messages = append(c.Messages, d.RemainingArgs()...)
			if len(c.Messages) == 0 {
				return true, d.Errf("page: messages takes one or more files or directories")
			}
		case "image_sources":
			c.ImageSources = d.RemainingArgs()
			if len(c.ImageSources) == 0 {
				return true, d.Errf("page: image_sources takes one or more sources")
			}
		case "sale":
			var id string
			if !d.NextArg() {
				return true, d.ArgErr()
			}
			id = d.Val()
			var sc pagekit.SaleConfig
			err := handler.ParseBlock(d, "page sale", func(name string) (bool, error) {
				switch name {
				case "template":
					return true, handler.StringArg(d, &sc.Template)
				case "lang":
					return true, handler.StringArg(d, &sc.Lang)
				}
				return false, nil
			})
			if err != nil {
				return true, err
			}
			if c.Sales == nil {
				c.Sales = map[string]pagekit.SaleConfig{}
			}
			c.Sales[id] = sc
		default:
			return false, nil
		}
		return true, nil
	})
}
