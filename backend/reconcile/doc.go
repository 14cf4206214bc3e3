// Package reconcile repairs a sale's Redis state from Postgres, the source of truth
// (Reconciler.Reconcile, POST /admin/sales/{id}/reconcile): lost orders recorded failed and
// compensated, pending compensations run, the stock, the buyers and the users' holdings put
// back to what Postgres says, under the sale's lock with every Postgres write fenced.
//
// Its arithmetic stands apart from any I/O, so that it can be read, and tested, without
// servers: the repair plan of a unit sale (PlanUnits), the spread of a stock delta over a
// sharded sale's shards (ShardDeltas) and the acceptance time inside an order id (AcceptedAt).
// It knows nothing of HTTP or of how a sale is created; the rebalance that follows the repair
// of a sharded sale is the one function of the sale side it is given.
package reconcile
