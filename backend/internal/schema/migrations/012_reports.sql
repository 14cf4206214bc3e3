-- The fairness reports (docs/operator.md, "The fairness report"): one per sale, written once
-- when the sale has ended and never changed. report is the canonical JSON the signature covers,
-- evidence the data it was computed from (published beside it).
CREATE TABLE sale_reports (
    sale_id      text PRIMARY KEY REFERENCES sales (id),
    report       bytea NOT NULL,
    kid          text NOT NULL,
    signature    text NOT NULL,
    evidence     bytea NOT NULL,
    published_at timestamptz NOT NULL DEFAULT now()
);

-- A published report is never replaced nor removed: the publisher inserts with ON CONFLICT DO
-- NOTHING, and this trigger refuses any UPDATE or DELETE.
CREATE FUNCTION sale_reports_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the fairness report of sale % is published and never changes', OLD.sale_id;
END $$;
CREATE TRIGGER sale_reports_immutable BEFORE UPDATE OR DELETE ON sale_reports
    FOR EACH ROW EXECUTE FUNCTION sale_reports_immutable();

-- Every key that ever signed a report (GET /.well-known/seckill-report-keys lists them all, so
-- a report signed before a key rotation still checks).
CREATE TABLE report_keys (
    kid        text PRIMARY KEY,
    public_key text NOT NULL,
    demo       boolean NOT NULL DEFAULT false,
    first_used timestamptz NOT NULL DEFAULT now()
);
