-- The source of truth for sales and orders. The gateway never connects here; only the backend.

CREATE TABLE sales (
    id            text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{1,64}$'),
    initial_stock integer NOT NULL CHECK (initial_stock >= 0),
    -- units not held by an order (created or paid); the stock guard keeps it from going negative
    stock         integer NOT NULL CHECK (stock >= 0),
    starts_at     timestamptz NOT NULL,
    ends_at       timestamptz NOT NULL,
    pay_within    interval NOT NULL DEFAULT interval '15 minutes',
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (ends_at > starts_at),
    CHECK (stock <= initial_stock)
);

CREATE TABLE orders (
    order_id    text PRIMARY KEY,
    sale_id     text NOT NULL REFERENCES sales (id),
    user_id     text NOT NULL,
    -- created | paid | cancelled | failed
    status      text NOT NULL CHECK (status IN ('created', 'paid', 'cancelled', 'failed')),
    reason      text,
    accepted_at timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- One order per user per sale, whatever its status: a cancelled or failed order keeps its row,
-- so a second message for the same (sale, user) can never create a second order.
CREATE UNIQUE INDEX orders_sale_user ON orders (sale_id, user_id);

-- The unpaid-order sweeper's scan.
CREATE INDEX orders_unpaid ON orders (sale_id, created_at) WHERE status = 'created';

-- Fencing tokens of the singleton jobs: a write carrying a token older than the last one seen
-- for its lock is refused (see redislock and backend/fence.go).
CREATE TABLE fences (
    lock_key   text PRIMARY KEY,
    token      bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
