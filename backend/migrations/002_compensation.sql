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
