// Package refusal moved to caddymodule/handler (issue 36: one home for what every handler
// shares). These aliases keep branches written against the old path compiling.
//
// Deprecated: moved to caddymodule/handler; removed after the merge.
package refusal

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/seckilledge/seckill/caddymodule/handler"
)

// Deprecated: moved to caddymodule/handler; removed after the merge.
type (
	Refusal      = handler.Refusal
	Writer       = handler.Writer
	Limits       = handler.Limits
	Subject      = handler.Subject
	OptionParser = handler.OptionParser
	Endpoints    = handler.Endpoints
	Joint        = handler.Joint
)

// Deprecated: moved to caddymodule/handler; removed after the merge.
const (
	DefaultSale = handler.DefaultSale
	DefaultUser = handler.DefaultUser
)

// Deprecated: moved to caddymodule/handler; removed after the merge.
var (
	Unauthenticated = handler.Unauthenticated
	BadRequest      = handler.BadRequest
	UnknownSale     = handler.UnknownSale
	NotStarted      = handler.NotStarted
	Ended           = handler.Ended
	SoldOut         = handler.SoldOut
	Paused          = handler.Paused
	AlreadyBought   = handler.AlreadyBought
	Unavailable     = handler.Unavailable
	PathMismatch    = handler.PathMismatch
	CrossSite       = handler.CrossSite
)

// Deprecated: moved to caddymodule/handler; removed after the merge.
var (
	Answer       = handler.Answer
	AppendBody   = handler.AppendBody
	Body         = handler.Body
	As           = handler.As
	Seconds      = handler.Seconds
	User         = handler.User
	CheckPath    = handler.CheckPath
	CheckRequest = handler.CheckRequest
	SameOrigin   = handler.SameOrigin
	WantsHTML    = handler.WantsHTML
	LeaveJoint   = handler.LeaveJoint
	TakeJoint    = handler.TakeJoint
)

// Directive is handler.Directive (a generic function cannot be aliased by a var).
//
// Deprecated: moved to caddymodule/handler; removed after the merge.
func Directive[T any, PT interface {
	*T
	caddyfile.Unmarshaler
	caddyhttp.MiddlewareHandler
}](h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	return handler.Directive[T, PT](h)
}

// Module is handler.Module (a generic function cannot be aliased by a var).
//
// Deprecated: moved to caddymodule/handler; removed after the merge.
func Module[T any, PT interface {
	*T
	caddy.Module
}](id caddy.ModuleID) caddy.ModuleInfo {
	return handler.Module[T, PT](id)
}
