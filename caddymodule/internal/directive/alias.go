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
	Top      = handler.ParseDirective
	Block    = handler.ParseBlock
	Flag     = handler.Flag
	String   = handler.StringArg
	Int      = handler.IntArg
	Float    = handler.FloatArg
	Duration = handler.DurationArg
)
