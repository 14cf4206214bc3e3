// Package core is the waiting room without transport: the decision of an answer from a reply of
// lua/room_queue.lua (Decide), the estimate of a wait (Pace, Estimate), a gateway's summary of a
// room (View, Summary), the room's Redis keys and places (PlaceOf), and the Store port with its
// Redis adapter (RedisStore) and reply types. It imports no Caddy (caddymodule/room is the
// handler), so its tests link no Caddy either (TestTheRoomCoreLinksNoCaddy).
package core
