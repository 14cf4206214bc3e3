// Package core is the waiting room without transport: what one gateway knows of its rooms
// (Gateway: the settings it read, each room's summary and view, the tickets it verified, the
// published pre-queues, the passing on of bans), the decision of an answer from a reply of
// lua/room_queue.lua (Decide), the estimate of a wait (Pace, Estimate), the room's places
// (PlaceOf; the keys are named in contract), and the Store port with its Redis adapter
// (RedisStore), its bound (BoundStore) and reply types. It imports no Caddy (caddymodule/room is the
// handler), so its tests link no Caddy either (TestTheSharedCorePartsLinkNoCaddy, in internal/testlayout).
package core
