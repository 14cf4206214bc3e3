// Package conformance holds the tests of the Caddy-facing contract that span the handlers: the
// shipped Caddyfiles and the Caddyfiles of the benchmarks, adapted with every seckill module
// registered (what they read at run time rather than hold, how they trust proxies), every
// handler's Caddyfile golden files and refused options, and the metric families a gateway with
// every handler and the backend export (deploy/grafana/testdata/families.json, the list the
// dashboard and the alert rules are checked against). It also holds the tests of what links
// Caddy in every part and has no handler binary of its own: `seckill_cors`, the challenge
// provider (caddymodule/botcheck/botcheckcaddy), the room kit's options, the Helm chart's
// Caddyfile, the relay's durations read as caddy.Duration reads them, and the handlers' shared
// kit (caddymodule/handler: the refusal writer, the option parsers, the routes, the
// same-origin rule). It is one test binary that links every
// module, so a handler's own test binary links that handler alone, a change to one handler
// relinks its binary and this one, not every handler's, and the packages that only check
// their files against the gateway (deploy, deploy/grafana) link no Caddy. It has no code of
// its own.
package conformance
