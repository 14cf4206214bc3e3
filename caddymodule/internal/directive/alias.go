// Package directive moved to caddymodule/handler (issue 36: one home for what every handler
// shares). These aliases keep branches written against the old path compiling.
//
// Deprecated: moved to caddymodule/handler; removed after the merge.
package directive

import "github.com/seckilledge/seckill/caddymodule/handler"

// Deprecated: moved to caddymodule/handler; removed after the merge.
type Option = handler.Option

// Deprecated: moved to caddymodule/handler; removed after the merge.
var (
	Top      = handler.Top
	Block    = handler.Block
	Flag     = handler.Flag
	String   = handler.String
	Int      = handler.Int
	Float    = handler.Float
	Duration = handler.Duration
)
