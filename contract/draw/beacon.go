package draw

// A draw's public beacon (docs/draw.md, "A public beacon"): the sale names a drand chain and a
// round that comes after its close when it is created, and the ranking's seed is derived from
// the committed seed and that round's randomness, which nobody knows before the round. The
// signature is checked with circl's BLS12-381 (sign/bls): no curve code of ours.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudflare/circl/sign/bls"
)

// SchemeUnchainedG1 is the only drand scheme a draw takes: drand's "bls-unchained-g1-rfc9380"
// (quicknet's): each round's signature is a BLS signature on G1 (48 bytes compressed) of
// SHA-256(round as 8 bytes big-endian) under the chain's public key on G2 (96 bytes), with the
// RFC 9380 hash to curve and the DST BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_ (circl's
// KeyG2SigG1); the round's randomness is SHA-256(signature). Unchained: a round is checked
// from its number and the chain's key alone, without the round before it.
const SchemeUnchainedG1 = "bls-unchained-g1-rfc9380"

// SeedLabel starts the message of the effective seed's HMAC (EffectiveSeed): a version, so a
// later derivation cannot be confused with this one.
const SeedLabel = "seckill-draw-seed-v1"

// Commit-reveal or beacon: the "randomness" of a draw's published result and proof.
const (
	// RandomnessCommitReveal: the ranking's seed is the committed seed alone (no beacon named).
	RandomnessCommitReveal = "commit-reveal"
	// RandomnessDrand: the ranking's seed is EffectiveSeed(seed, beacon, round's randomness).
	RandomnessDrand = "commit-reveal+drand"
)

// Beacon is the public beacon a draw names at its creation, published with its commitment
// before any entry: a drand chain (hash, public key, scheme, period, genesis) and the round
// the draw waits for, the first one after the entries close. Signature and Randomness are the
// round as fetched at the draw (absent before).
type Beacon struct {
	// ChainHash is the chain's hash (64 hex digits), the path of drand's HTTP API.
	ChainHash string `json:"chain_hash"`
	// PublicKey is the chain's group key (hex, 96 bytes: a compressed G2 point).
	PublicKey string `json:"public_key"`
	// Scheme is SchemeUnchainedG1.
	Scheme string `json:"scheme"`
	// Period is the seconds between two rounds; GenesisTime the Unix second of round 1.
	Period      int   `json:"period"`
	GenesisTime int64 `json:"genesis_time"`
	// Round is the round the draw waits for (RoundAfter the close).
	Round uint64 `json:"round,omitempty"`
	// Signature is the round's signature (hex, 48 bytes), Randomness SHA-256 of it (hex).
	Signature  string `json:"signature,omitempty"`
	Randomness string `json:"randomness,omitempty"`
}

// Quicknet is the League of Entropy's quicknet chain (https://api.drand.sh/<hash>/info): a
// round every 3 s since 2023-08-23. The backend's default chain when it is given drand
// endpoints without a chain of its own.
var Quicknet = Beacon{
	ChainHash:   "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971",
	PublicKey:   "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a",
	Scheme:      SchemeUnchainedG1,
	Period:      3,
	GenesisTime: 1692803367,
}

// Errors of a beacon's check.
var (
	ErrBeaconChain     = errors.New("draw: the beacon's chain is not well formed")
	ErrBeaconSignature = errors.New("draw: the beacon round's signature does not verify under the chain's key")
	// ErrQuicknetMismatch: the beacon gives quicknet's chain hash with values that are not
	// quicknet's (CheckQuicknet).
	ErrQuicknetMismatch = errors.New("draw: the beacon names quicknet's chain hash with a public key, period or genesis that are not quicknet's")
)

// CheckQuicknet is ErrQuicknetMismatch when b gives quicknet's chain hash with another public key
// (rounds signed by someone else, passed off as the League of Entropy's), period or genesis
// (rounds at other times than quicknet's, the named one maybe out before the entries); nil for
// quicknet itself and for any other chain hash.
func (b Beacon) CheckQuicknet() error {
	if b.ChainHash != Quicknet.ChainHash {
		return nil
	}
	if !strings.EqualFold(b.PublicKey, Quicknet.PublicKey) || b.Period != Quicknet.Period || b.GenesisTime != Quicknet.GenesisTime {
		return ErrQuicknetMismatch
	}
	return nil
}

// ValidateChain checks the chain's fields (not the round): hex of the right lengths, a public
// key that is a point of G2's subgroup, the one scheme, a period of at least a second.
func (b Beacon) ValidateChain() error {
	if h, err := hex.DecodeString(b.ChainHash); err != nil || len(h) != 32 || b.ChainHash != strings.ToLower(b.ChainHash) {
		return fmt.Errorf("%w: chain_hash must be 64 lowercase hex digits", ErrBeaconChain)
	}
	if _, err := b.publicKey(); err != nil {
		return err
	}
	if b.Scheme != SchemeUnchainedG1 {
		return fmt.Errorf("%w: scheme %q, want %q", ErrBeaconChain, b.Scheme, SchemeUnchainedG1)
	}
	if b.Period < 1 || b.Period > 3600 {
		return fmt.Errorf("%w: period must be 1 to 3600 seconds", ErrBeaconChain)
	}
	if b.GenesisTime <= 0 {
		return fmt.Errorf("%w: genesis_time must be a Unix time", ErrBeaconChain)
	}
	return nil
}

func (b Beacon) publicKey() (*bls.PublicKey[bls.KeyG2SigG1], error) {
	raw, err := hex.DecodeString(b.PublicKey)
	if err != nil || len(raw) != 96 {
		return nil, fmt.Errorf("%w: public_key must be 192 hex digits (a compressed G2 point)", ErrBeaconChain)
	}
	var pk bls.PublicKey[bls.KeyG2SigG1]
	if err := pk.UnmarshalBinary(raw); err != nil || !pk.Validate() {
		return nil, fmt.Errorf("%w: public_key is not a point of G2", ErrBeaconChain)
	}
	return &pk, nil
}

// Chain is the beacon without its round and the round's values: what the backend is
// configured with.
func (b Beacon) Chain() Beacon {
	return Beacon{ChainHash: b.ChainHash, PublicKey: b.PublicKey, Scheme: b.Scheme, Period: b.Period, GenesisTime: b.GenesisTime}
}

// RoundAt is drand's round current at t: 0 before genesis, then 1 + the periods since genesis.
func (b Beacon) RoundAt(t time.Time) uint64 {
	if b.Period <= 0 || t.Unix() < b.GenesisTime {
		return 0
	}
	return uint64((t.Unix()-b.GenesisTime)/int64(b.Period)) + 1
}

// RoundAfter is the first round published strictly after t: nobody, the sale's operator
// included, can know its randomness at t or before.
func (b Beacon) RoundAfter(t time.Time) uint64 { return b.RoundAt(t) + 1 }

// DrawRound is the one round a draw whose entries close at closes ranks with: the first published
// strictly after the close (RoundAfter). The backend names it at the draw's creation; a checker
// requires exactly it, since an operator free to pick among later rounds could pick the one
// whose ranking he likes.
func (b Beacon) DrawRound(closes time.Time) uint64 { return b.RoundAfter(closes) }

// RoundTime is when round is published: genesis + (round - 1) * period.
func (b Beacon) RoundTime(round uint64) time.Time {
	if round == 0 {
		return time.Unix(b.GenesisTime, 0).UTC()
	}
	return time.Unix(b.GenesisTime+int64(round-1)*int64(b.Period), 0).UTC()
}

// RoundMessage is what the chain signs for round: SHA-256 of the round as 8 bytes big-endian.
func RoundMessage(round uint64) [32]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], round)
	return sha256.Sum256(b[:])
}

// VerifyRound checks that sigHex is the chain's signature of round and returns the round's
// randomness, SHA-256 of the signature. ErrBeaconSignature when it is not (a forged signature,
// another round's, another chain's).
func (b Beacon) VerifyRound(round uint64, sigHex string) (Hash, error) {
	var rnd Hash
	pk, err := b.publicKey()
	if err != nil {
		return rnd, err
	}
	if b.Scheme != SchemeUnchainedG1 {
		return rnd, fmt.Errorf("%w: scheme %q", ErrBeaconChain, b.Scheme)
	}
	sig, err := hex.DecodeString(sigHex)
	if err != nil || len(sig) != 48 {
		return rnd, fmt.Errorf("%w: want 96 hex digits", ErrBeaconSignature)
	}
	msg := RoundMessage(round)
	if !bls.Verify(pk, msg[:], sig) {
		return rnd, ErrBeaconSignature
	}
	return sha256.Sum256(sig), nil
}

// EffectiveSeed is the seed a draw with a beacon ranks with:
//
//	HMAC-SHA256(key = seed, message = "seckill-draw-seed-v1" || chain hash (32 bytes) ||
//	            round (8 bytes big-endian) || randomness (32 bytes))
//
// Every part after the label has a fixed length, so no two inputs share a message; the chain
// and round are in it, so the same randomness named under another chain or round gives another
// seed. Neither the committed seed alone (the operator's) nor the randomness alone (drand's)
// fixes it.
func EffectiveSeed(seed []byte, chainHash string, round uint64, randomness Hash) ([]byte, error) {
	ch, err := hex.DecodeString(chainHash)
	if err != nil || len(ch) != 32 {
		return nil, fmt.Errorf("%w: chain_hash", ErrBeaconChain)
	}
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(SeedLabel))
	m.Write(ch)
	var r [8]byte
	binary.BigEndian.PutUint64(r[:], round)
	m.Write(r[:])
	m.Write(randomness[:])
	return m.Sum(nil), nil
}

// RankingSeed is the seed the ranking uses: the committed seed itself for a draw without a
// beacon (b nil), else EffectiveSeed with the beacon's round, after checking its signature and
// that its published randomness is SHA-256 of it.
func RankingSeed(seed []byte, b *Beacon) ([]byte, error) {
	if b == nil {
		return seed, nil
	}
	if b.Signature == "" {
		return nil, fmt.Errorf("draw: beacon round %d is not fetched yet", b.Round)
	}
	rnd, err := b.VerifyRound(b.Round, b.Signature)
	if err != nil {
		return nil, err
	}
	if b.Randomness != "" && !strings.EqualFold(b.Randomness, hex.EncodeToString(rnd[:])) {
		return nil, fmt.Errorf("draw: the beacon's randomness %s is not SHA-256 of its signature", b.Randomness)
	}
	return EffectiveSeed(seed, b.ChainHash, b.Round, rnd)
}
