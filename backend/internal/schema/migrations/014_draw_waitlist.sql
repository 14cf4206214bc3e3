-- The draw's waitlist (docs/draw.md, "The waitlist"): a draw that has it hands a unit released
-- by a winner (an unpaid order's timeout, a cancellation, a refused payment) to the next rank of
-- its size at once, by raising the current wave's upper rank by one.
ALTER TABLE draws ADD COLUMN waitlist boolean NOT NULL DEFAULT false;

-- One row per raise, from the draw's raises log in Redis (compensate.lua): the released order
-- that raised it (one raise per order at most), the wave raised, the position it gave (the
-- wave's upper rank before the raise) and the claim end the raise set.
CREATE TABLE draw_raises (
    sale_id     text NOT NULL REFERENCES draws (sale_id),
    order_id    text NOT NULL,
    variant     text NOT NULL,
    wave        integer NOT NULL CHECK (wave >= 1),
    pos         integer NOT NULL CHECK (pos >= 0),
    claim_until timestamptz NOT NULL,
    at          timestamptz NOT NULL,
    PRIMARY KEY (sale_id, order_id),
    UNIQUE (sale_id, variant, pos)
);
