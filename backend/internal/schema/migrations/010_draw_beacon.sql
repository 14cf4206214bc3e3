-- A draw's public beacon (docs/draw.md, "A public beacon"): the drand chain and round named at
-- the sale's creation (NULL: the draw is commit-reveal only), and the round's signature and
-- randomness once the draw has fetched and checked them. beacon_error is the last failure to
-- get the round (the cockpit shows it while the draw waits); NULL once it is fetched.
ALTER TABLE draws
    ADD COLUMN beacon            jsonb,
    ADD COLUMN beacon_signature  text,
    ADD COLUMN beacon_randomness text,
    ADD COLUMN beacon_error      text;
