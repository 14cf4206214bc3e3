package invariants

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// RoomRank is the rank of a pre-queue entry: HMAC-SHA256(seed, entry id as ASCII). The
// pre-queue is admitted by rank, bytes compared big-endian, ascending (docs/room.md). This is
// the public rule anyone recomputes once the seed is revealed; it is written here, apart from
// the gateway's code, so the verifier does not trust what it checks.
func RoomRank(seed []byte, entryID string) []byte {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(entryID))
	return m.Sum(nil)
}

// RoomOrderProblems lists what is wrong with a revealed room: the seed against the commitment
// published at preheat, and the entries' order against their ranks, with no entry twice. Both
// `seckill-bench verify-room` (from the public endpoints) and the verifier's invariant 6
// (from Redis) use it.
func RoomOrderProblems(commitment, seedHex string, entries []string) []string {
	var problems []string
	seed, err := hex.DecodeString(seedHex)
	if err != nil || len(seed) == 0 {
		return []string{"the seed is not revealed or not hex"}
	}
	if sum := sha256.Sum256(seed); hex.EncodeToString(sum[:]) != commitment {
		problems = append(problems, "SHA-256 of the revealed seed is not the commitment published at preheat")
	}
	seen := make(map[string]bool, len(entries))
	var prev []byte
	for i, e := range entries {
		if seen[e] {
			problems = append(problems, fmt.Sprintf("entry %s appears twice", e))
		}
		seen[e] = true
		rank := RoomRank(seed, e)
		if prev != nil && bytes.Compare(prev, rank) > 0 {
			problems = append(problems, fmt.Sprintf("place %d (%s) ranks before place %d", i+1, e, i))
		}
		prev = rank
	}
	return problems
}
