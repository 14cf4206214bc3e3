-- Variants and per-user quantity limits (docs/DESIGN.md, "Variants and quantities").
--
-- A sale without variants and with per_user_limit 1 keeps every row exactly as before: its
-- orders have variant_id '', quantity 1 and seq 1, and sales.stock is its only stock.

-- At most this many units per user in the whole sale (all variants together).
ALTER TABLE sales ADD COLUMN IF NOT EXISTS per_user_limit integer NOT NULL DEFAULT 1
    CHECK (per_user_limit BETWEEN 1 AND 1000);

-- A variant sale's stock per variant. sales.stock and sales.initial_stock stay the totals (the
-- sum over the variants): the batched writer guards both in the same statement, so neither can
-- drift from the other.
CREATE TABLE IF NOT EXISTS sale_variants (
    sale_id       text NOT NULL REFERENCES sales (id),
    variant_id    text NOT NULL CHECK (variant_id ~ '^[A-Za-z0-9_-]{1,64}$'),
    initial_stock integer NOT NULL CHECK (initial_stock >= 0),
    stock         integer NOT NULL,
    PRIMARY KEY (sale_id, variant_id),
    CHECK (stock >= 0 AND stock <= initial_stock)
);

-- What an order holds: quantity units of variant_id ('' for a sale without variants). seq is
-- the user's purchase number in the sale (1-based, from the gate): a user may hold several
-- orders of one sale when its limit allows.
ALTER TABLE orders ADD COLUMN IF NOT EXISTS variant_id text NOT NULL DEFAULT '';
ALTER TABLE orders ADD COLUMN IF NOT EXISTS quantity integer NOT NULL DEFAULT 1 CHECK (quantity >= 1);
ALTER TABLE orders ADD COLUMN IF NOT EXISTS seq integer NOT NULL DEFAULT 1 CHECK (seq >= 1);

-- One live order per (sale, user, purchase number). A limit-1 sale always has seq 1, so its
-- old guarantee (one live order per user) is unchanged; a redelivered message is still caught
-- by the order id (primary key). The per-user limit itself is the gate's (held units in Redis)
-- and the verifier's to check: a unit count cannot be a unique index.
DROP INDEX IF EXISTS orders_sale_user_live;
CREATE UNIQUE INDEX IF NOT EXISTS orders_sale_user_seq_live ON orders (sale_id, user_id, seq)
    WHERE status IN ('created', 'paid');
