package core

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"

	"github.com/seckilledge/seckill/contract"
)

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
	p.raw = contract.RoomEntryID(entryKey, sale, user)
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
