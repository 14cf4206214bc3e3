-- Hot-sale stock sharding (docs/scaling.md): a sale's Redis stock may be split over this many
-- shards, each in its own hash slot. 1 (the default) is an unsharded sale, with the keys of
-- DESIGN.md. The count never changes once the sale is created: the gateways cache it.
ALTER TABLE sales ADD COLUMN IF NOT EXISTS shards integer NOT NULL DEFAULT 1 CHECK (shards BETWEEN 1 AND 64);
