-- Compensation bookkeeping: an order that ends failed or cancelled must give its unit back to
-- Redis exactly once. compensated_at is set once compensate.lua has run for it; the sweeper
-- retries the rows still NULL (Redis was down), and compensate.lua is idempotent per order id,
-- so a retry after a crash between the script and this update changes nothing.
ALTER TABLE orders ADD COLUMN compensated_at timestamptz;

CREATE INDEX orders_uncompensated ON orders (updated_at)
    WHERE status IN ('failed', 'cancelled') AND compensated_at IS NULL;

-- Order-status polls for orders not in Postgres yet look for the sales live at the order's
-- acceptance time (UUIDv7 carries it).
CREATE INDEX sales_window ON sales (starts_at, ends_at);

-- The foreign key orders.sale_id -> sales.id runs one trigger query per inserted row; for the
-- batched writer (500 orders of one sale per statement) it cost about a third of the insert
-- time. The writer checks that the sale exists inside the same statement (and the baselines and
-- reconcile read the sale first), and the backend never deletes a sale, so the key guarded
-- nothing the code does not already guarantee.
ALTER TABLE orders DROP CONSTRAINT IF EXISTS orders_sale_id_fkey;

-- One live order per user per sale. Compensation removes a failed or cancelled order's buyer
-- from Redis, which lets the gate accept the same user again (with a new order id); with a
-- unique index over every status, that new order would be silently dropped as a duplicate and
-- its unit lost. The old row stays (its id still answers cancelled/failed), and at most one
-- created-or-paid order per (sale, user) can exist. Idempotency of a redelivered message comes
-- from the order id (primary key).
DROP INDEX IF EXISTS orders_sale_user;
CREATE UNIQUE INDEX orders_sale_user_live ON orders (sale_id, user_id) WHERE status IN ('created', 'paid');
