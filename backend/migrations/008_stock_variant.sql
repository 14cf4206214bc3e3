-- Stock changes of one variant (POST /admin/sales/{id}/stock with "variant"; docs/operator.md).
--
-- variant_id names the variant whose units a change added or removed; '' for a sale without
-- variants (every row written before this migration). It is part of what a request id names:
-- the same request id sent again with another variant is refused (request_id_reused), as with
-- another sale or another delta.
ALTER TABLE stock_changes ADD COLUMN IF NOT EXISTS variant_id text NOT NULL DEFAULT ''
    CHECK (variant_id = '' OR variant_id ~ '^[A-Za-z0-9_-]{1,64}$');
