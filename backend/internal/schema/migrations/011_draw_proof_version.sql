-- The format of a draw's Merkle tree (contract/draw.ProofVersion, published as "proof_version"
-- with its result and proofs): 1 for the draws closed before domain-separated hashes
-- (the default, so their published roots still verify), 2 for those closed since. Set at the
-- close, when the tree is built.
ALTER TABLE draws ADD COLUMN proof_version smallint NOT NULL DEFAULT 1 CHECK (proof_version IN (1, 2));
