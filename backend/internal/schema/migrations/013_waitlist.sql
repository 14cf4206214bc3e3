-- The waitlist of a room sale (docs/room.md, "The waitlist"): its webhook events share the order
-- events' outbox. A waitlist event's order_id is "unit:<sale>:<user>", so one waiter's offer and
-- its pass are delivered in order; the offer's end is in claim_until.
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_type_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_type_check CHECK (type IN (
    'order.created', 'order.paid', 'order.cancelled', 'order.failed',
    'draw.won', 'draw.lost', 'draw.expired',
    'unit.offered', 'unit.passed'));
