-- Operator controls (docs/operator.md).
--
-- paused: the operator stopped the sale. Postgres keeps it so that a sale preheated again
-- (Redis lost its keys) comes back paused; the gateways read it from the meta hash's "state".
ALTER TABLE sales ADD COLUMN IF NOT EXISTS paused boolean NOT NULL DEFAULT false;

-- The journal of stock changes (POST /admin/sales/{id}/stock). request_id makes a change
-- idempotent: a retried request finds its row and is answered from it, never applied twice.
-- status: pending (journaled, nothing applied), db (Postgres applied, Redis not confirmed),
-- applied (both stores), refused (not enough unsold units; nothing applied).
CREATE TABLE stock_changes (
    request_id text PRIMARY KEY CHECK (length(request_id) BETWEEN 1 AND 128),
    sale_id    text NOT NULL,
    delta      integer NOT NULL CHECK (delta <> 0),
    status     text NOT NULL CHECK (status IN ('pending', 'db', 'applied', 'refused')),
    who        text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stock_changes_unfinished ON stock_changes (sale_id) WHERE status IN ('pending', 'db');

-- Who did what to which sale, when, with the state before and after (JSON). Written in the
-- same transaction as the Postgres side of the control it records.
CREATE TABLE audit_log (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    who        text NOT NULL,
    role       text NOT NULL,
    action     text NOT NULL,
    sale_id    text NOT NULL,
    before     jsonb NOT NULL DEFAULT '{}',
    after      jsonb NOT NULL DEFAULT '{}',
    request_id text NOT NULL
);
CREATE INDEX audit_log_sale ON audit_log (sale_id, id DESC);
