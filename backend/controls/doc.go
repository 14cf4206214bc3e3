// Package controls is the operator's hand on a live sale (docs/operator.md): pause and resume,
// move or bring forward the end, add or remove stock (journaled and idempotent per request id,
// in an order of the two stores that never sells a unit Postgres does not have), the sales
// list with each sale's state, and the audit trail every control writes in its own
// transaction. Its Lua scripts (state, window, stock) sit beside it: only the controls run them.
//
// A Controls is given the stores, the clock, the sale's lock and reconcile (which ends an
// interrupted stock change); the backend mounts its handlers behind its role checks and gives
// preheat RestorePaused.
package controls
