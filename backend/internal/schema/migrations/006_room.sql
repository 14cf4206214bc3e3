-- Waiting room (docs/room.md): a sale's `"room": {...}` from POST /admin/sales, as given (every
-- field optional; NULL: the sale has no room). Preheat passes it to backend.PreheatRoom.
ALTER TABLE sales ADD COLUMN IF NOT EXISTS room jsonb;
