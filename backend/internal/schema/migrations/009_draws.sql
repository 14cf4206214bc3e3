-- Draws (docs/draw.md): a sale in draw mode, its entries as fixed at the close, the Merkle tree
-- over them, the waves of each variant, and the draw's webhook events.

-- A sale's "draw" as created (NULL: the sale is not a draw). The seed is written only once the
-- draw has run (it is public from then on); before that it lives in Redis alone.
CREATE TABLE draws (
    sale_id          text PRIMARY KEY REFERENCES sales (id),
    opens_at         timestamptz NOT NULL,
    closes_at        timestamptz NOT NULL,
    claim_within_ms  bigint NOT NULL CHECK (claim_within_ms >= 1000),
    dmin             integer NOT NULL DEFAULT 0,
    dmax             integer NOT NULL DEFAULT 0,
    seed_commitment  text,
    -- open (taking entries), closed (entries fixed, root published), drawn (seed revealed, waves
    -- running), done (no wave will follow in any variant)
    state            text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed', 'drawn', 'done')),
    entries          integer,
    entries_root     text,
    seed             text,
    closed_at        timestamptz,
    drawn_at         timestamptz,
    CHECK (closes_at > opens_at)
);

-- The entries fixed at the close, in entry-id order (the leaves of the tree): idx is the entry's
-- leaf index (0-based, in entry-id order). pos is its 0-based position in its variant's ranking,
-- set by the draw (NULL until then).
CREATE TABLE draw_entries (
    sale_id   text NOT NULL REFERENCES draws (sale_id),
    entry_id  text NOT NULL,
    user_id   text NOT NULL,
    variant   text NOT NULL,
    idx       integer NOT NULL,
    leaf      bytea NOT NULL,
    pos       integer,
    PRIMARY KEY (sale_id, entry_id)
);
CREATE UNIQUE INDEX draw_entries_user ON draw_entries (sale_id, user_id);
CREATE UNIQUE INDEX draw_entries_idx ON draw_entries (sale_id, idx);
CREATE INDEX draw_entries_rank ON draw_entries (sale_id, variant, pos);

-- The tree's levels above the leaves (level 1 = the parents of the leaves); a proof reads at
-- most one node per level.
CREATE TABLE draw_nodes (
    sale_id  text NOT NULL REFERENCES draws (sale_id),
    level    smallint NOT NULL CHECK (level >= 1),
    idx      integer NOT NULL,
    hash     bytea NOT NULL,
    PRIMARY KEY (sale_id, level, idx)
);

-- Each wave of each variant: positions [lo, hi) of the variant's ranking won, to buy before
-- claim_until.
CREATE TABLE draw_waves (
    sale_id      text NOT NULL REFERENCES draws (sale_id),
    variant      text NOT NULL,
    wave         integer NOT NULL CHECK (wave >= 1),
    lo           integer NOT NULL,
    hi           integer NOT NULL CHECK (hi >= lo),
    at           timestamptz NOT NULL,
    claim_until  timestamptz NOT NULL,
    -- set when the wave's claim window has been closed (its expired winners recorded)
    ended_at     timestamptz,
    PRIMARY KEY (sale_id, variant, wave)
);

-- Each variant of a drawn sale: its entries as fixed at the close (the waves' bound, read without
-- counting draw_entries) and when it was done (no wave will follow: its losers were told then).
CREATE TABLE draw_variants (
    sale_id  text NOT NULL REFERENCES draws (sale_id),
    variant  text NOT NULL,
    entries  integer NOT NULL,
    done_at  timestamptz,
    PRIMARY KEY (sale_id, variant)
);

-- The draw's webhook events share the order events' outbox. A draw event's order_id is
-- "draw:<sale>:<user>", so one entrant's events are delivered in order like an order's.
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_type_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_type_check CHECK (type IN (
    'order.created', 'order.paid', 'order.cancelled', 'order.failed',
    'draw.won', 'draw.lost', 'draw.expired'));
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS entry_id text;
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS variant text;
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS wave integer;
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS claim_until timestamptz;
