// Package handler is what every seckill handler shares, as caddyhttp is for Caddy's own
// modules: the settings (Limits, Subject) and their Caddyfile block parser, the refusal type and
// its writer, the JSON answer writer, the endpoint router of a handler that serves several
// routes (Routes, Endpoints), the request checks (CheckRequest) and the Joint a handler leaves
// to the next. Its Caddy-free part, handler/core, holds what the deciding cores use too: the
// Refusal, the outcome table and the sold-out memory's Generation. caddymodule/edge stays the
// runtime (deadlines, shedding, shards).
package handler

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// Directive is the httpcaddyfile.UnmarshalFunc of a handler whose pointer type parses its own
// Caddyfile block: RegisterHandlerDirective("seckill_gate", handler.Directive[Gate]).
func Directive[T any, PT interface {
	*T
	caddyfile.Unmarshaler
	caddyhttp.MiddlewareHandler
}](h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := PT(new(T))
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// Module is the caddy.ModuleInfo of a handler whose pointer type is the module:
// func (Gate) CaddyModule() caddy.ModuleInfo { return handler.Module[Gate]("http.handlers.seckill_gate") }.
func Module[T any, PT interface {
	*T
	caddy.Module
}](id caddy.ModuleID) caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: id, New: func() caddy.Module { return PT(new(T)) }}
}
