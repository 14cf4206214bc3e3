package core

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"

	"github.com/seckilledge/seckill/contract"
)

// Redis keys of a sale's room. They share the sale's hash tag with the meta and buyers keys,
// so room_queue.lua runs unchanged on Redis Cluster.
func roomKey(sale string) string  { return contract.RoomKey(sale) }
func queueKey(sale string) string { return roomKey(sale) + ":q" }
func liveKey(sale string) string  { return contract.RoomLiveKey(sale) }
func spentKey(sale string) string { return roomKey(sale) + ":spent" }
func seenKey(sale string) string  { return roomKey(sale) + ":seen" }
func awayKey(sale string) string  { return roomKey(sale) + ":away" }
func backKey(sale string) string  { return roomKey(sale) + ":back" }
func claimKey(sale string) string { return roomKey(sale) + ":claim" }
func idleKey(sale string) string  { return roomKey(sale) + ":idle" }
func keysKey(sale string) string  { return contract.RoomKeysKey(sale) }

// ClaimKey is the sorted set of a sale's admissions not judged yet (user -> when they are
// judged, unix ms): conversion-aware admission.
func ClaimKey(sale string) string { return claimKey(sale) }

// KeysKey is the hash of a sale's places bound to a device key: user -> thumbprint.
func KeysKey(sale string) string { return keysKey(sale) }

// IdleKey is the sorted set of a sale's live admissions judged no-shows (user -> admitted
// until, unix ms).
func IdleKey(sale string) string { return idleKey(sale) }

// SeenKey is the sorted set of a sale's waiters present: user -> present until (unix ms).
func SeenKey(sale string) string { return seenKey(sale) }

// RoomKey is the hash holding a sale's room settings, secrets and counters.
func RoomKey(sale string) string { return roomKey(sale) }

// QueueKey is the sorted set of a sale's places.
func QueueKey(sale string) string { return queueKey(sale) }

// LiveKey is the sorted set of a sale's live admissions (user -> admitted until, unix ms).
func LiveKey(sale string) string { return liveKey(sale) }

// SpentKey is the sorted set of a sale's spent proof-of-work nonces.
func SpentKey(sale string) string { return spentKey(sale) }

// AwayKey is the sorted set of a sale's waiters whose place the cursor passed while they were
// absent (user -> queue index).
func AwayKey(sale string) string { return awayKey(sale) }

// BackKey is the sorted set of the away waiters seen again, admitted first.
func BackKey(sale string) string { return backKey(sale) }

// EntryIDLen is the raw length of an entry id; its public form is base64url (22 characters).
const EntryIDLen = 16

// RankLen is the length of a rank, HMAC-SHA256(seed, entry id).
const RankLen = sha256.Size

// Place is where a user stands: their public entry id and its rank.
type Place struct {
	EntryID string // 22 base64url characters
	Rank    [RankLen]byte
	raw     [EntryIDLen]byte
}

// PlaceOf derives a user's place. The entry id is a keyed hash of (sale, user) under the
// sale's secret entry key, so entering again finds the same place without a per-user index in
// Redis, and the published entry ids reveal no user id. The rank is HMAC-SHA256 keyed by the
// seed over the entry id's ASCII text: what anyone recomputes once the seed is revealed.
func PlaceOf(entryKey, seed []byte, sale, user string) Place {
	var p Place
	m := hmac.New(sha256.New, entryKey)
	m.Write([]byte("seckill-room-entry\x00"))
	m.Write([]byte(sale))
	m.Write([]byte{0})
	m.Write([]byte(user))
	copy(p.raw[:], m.Sum(nil))
	p.EntryID = base64.RawURLEncoding.EncodeToString(p.raw[:])
	copy(p.Rank[:], Rank(seed, p.EntryID))
	return p
}

// Rank is HMAC-SHA256(seed, entryID): the pre-queue is ordered by it, bytes compared
// big-endian, ascending.
func Rank(seed []byte, entryID string) []byte {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(entryID))
	return m.Sum(nil)
}

// Member is the place's member in the queue's sorted set: rank, raw entry id, user. Pre-queue
// places all have score 0, and Redis orders equal scores by the member's bytes: by rank.
func (p Place) Member(user string) string {
	b := make([]byte, 0, RankLen+EntryIDLen+len(user))
	b = append(b, p.Rank[:]...)
	b = append(b, p.raw[:]...)
	b = append(b, user...)
	return string(b)
}

// EntryIDOfMember is the public entry id inside a queue member ("" when malformed).
func EntryIDOfMember(member string) string {
	if len(member) <= RankLen+EntryIDLen {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(member[RankLen : RankLen+EntryIDLen]))
}
