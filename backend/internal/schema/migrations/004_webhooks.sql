-- Webhooks to the shop (docs/backend.md, "Webhooks"): a transactional outbox. Every order change
-- that the shop must hear of writes its event here in the same transaction as the change, so an
-- event exists if and only if the change committed; the delivery worker sends it afterwards, at
-- least once, in order per order.

-- The sale's receiver; NULL means the backend's default (SECKILL_WEBHOOK_URL), if any.
ALTER TABLE sales ADD COLUMN IF NOT EXISTS webhook_url text;

CREATE TABLE webhook_deliveries (
    -- the event id, which the receiver dedupes by
    id           text PRIMARY KEY,
    -- insertion order; an order's events are delivered in this order
    seq          bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    type         text NOT NULL CHECK (type IN ('order.created', 'order.paid', 'order.cancelled', 'order.failed')),
    order_id     text NOT NULL,
    sale_id      text NOT NULL,
    user_id      text NOT NULL,
    -- when the order changed (the event's "at")
    at           timestamptz NOT NULL DEFAULT now(),
    -- the sale's webhook_url when the event was written; NULL: the default at delivery time
    url          text,
    -- pending (to send; next_at is when, 3000-01-01 while an earlier event of the same order is
    -- not delivered yet), delivered, dead (attempts exhausted; replay by hand)
    state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead')),
    attempts     integer NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL DEFAULT now(),
    last_status  integer,
    last_error   text,
    delivered_at timestamptz
);

-- The worker's scan: pending events, due first.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at, seq) WHERE state = 'pending';
-- "Is an earlier event of this order still undelivered?"
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (order_id, seq) WHERE state <> 'delivered';
-- The admin listing and the retention cleanup.
CREATE INDEX webhook_deliveries_sale ON webhook_deliveries (sale_id, seq);
CREATE INDEX webhook_deliveries_delivered ON webhook_deliveries (delivered_at) WHERE state = 'delivered';
