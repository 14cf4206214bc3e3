package contract

import (
	"crypto/hmac"
	"crypto/sha256"
)

// RoomEntryID is a user's raw room entry id: the first 16 bytes of
// HMAC-SHA256(entry key, "seckill-room-entry\0" sale "\0" user) (docs/room.md, "Entry id").
// The published form is its base64url without padding. The gateway derives it at entry and the
// backend's fairness report derives the same value, so both call this one function.
func RoomEntryID(entryKey []byte, sale, user string) (id [16]byte) {
	m := hmac.New(sha256.New, entryKey)
	m.Write([]byte("seckill-room-entry\x00"))
	m.Write([]byte(sale))
	m.Write([]byte{0})
	m.Write([]byte(user))
	copy(id[:], m.Sum(nil))
	return id
}
