-- Stock changes of one variant (POST /admin/sales/{id}/stock with "variant"; docs/operator.md).
--
-- variant_id names the variant whose units a change added or removed; '' for a sale without
-- variants (every row written before this migration). It is part of what a request id names:
-- the same request id sent again with another variant is refused (request_id_reused), as with
-- another sale or another delta.
ALTER TABLE stock_changes ADD COLUMN IF NOT EXISTS variant_id text NOT NULL DEFAULT ''
    CHECK (variant_id = '' OR variant_id ~ '^[A-Za-z0-9_-]{1,64}$');

-- fence is the sale lock's fencing token the change was journaled under. A retried addition
-- whose Postgres half is done ("db") compares it with the newest token recorded for the lock
-- (table fences): equal, no reconcile or preheat (which set Redis from Postgres) ran since, so
-- the retry may apply the Redis half itself without counting the units twice. NULL for rows
-- written before this column: their retry reconciles, as before.
ALTER TABLE stock_changes ADD COLUMN IF NOT EXISTS fence bigint;
