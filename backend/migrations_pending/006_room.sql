-- Waiting room (docs/room.md): a sale's `"room": {...}` from POST /admin/sales, as given (every
-- field optional; NULL: the sale has no room). Preheat passes it to backend.PreheatRoom.
-- Kept out of backend/migrations until 004 and 005 land: tern refuses a gap in the numbering.
ALTER TABLE sales ADD COLUMN IF NOT EXISTS room jsonb;
