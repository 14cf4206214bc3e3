// Package draw is the pure arithmetic of a draw sale (DESIGN.md, "Draws"; docs/draw.md): the
// seed's commitment, the leaves and the Merkle tree of the entries fixed at the close, the
// inclusion proofs, the ranking by HMAC-SHA256(seed, entry id) and the waves. The backend runs
// the draw with it, the verifier (seckill-bench verify-draw, internal/invariants) re-runs it from the
// published data, and a shop or an entrant can do the same with nothing but this file: it
// imports only the standard library and never touches Redis, Postgres or the network.
package draw

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Entry is one entry as published after the close: its id and the variant (size) it is for.
type Entry struct {
	ID      string `json:"entry_id"`
	Variant string `json:"variant"`
}

// Hash is a SHA-256 digest.
type Hash = [32]byte

// Commitment is the public commitment to a seed: hex SHA-256 of its bytes.
func Commitment(seed []byte) string {
	s := sha256.Sum256(seed)
	return hex.EncodeToString(s[:])
}

// Opens reports whether seed (hex) opens commitment (hex).
func Opens(seedHex, commitment string) bool {
	seed, err := hex.DecodeString(seedHex)
	if err != nil || len(seed) == 0 {
		return false
	}
	return Commitment(seed) == strings.ToLower(commitment)
}

// ProofVersion is the format of the Merkle tree this package builds, published with every
// draw result and proof as "proof_version" (DESIGN.md, "Draws"):
//
//   - 1 (a result or proof without the field): leaf SHA-256(id "\n" variant), node
//     SHA-256(left || right). An inner node could be presented as a leaf.
//   - 2: domain-separated as in RFC 6962 (2.1): leaf SHA-256(0x00 || id "\n" variant), node
//     SHA-256(0x01 || left || right); a proof names its leaf index, which fixes its length and
//     the side of each step.
//
// The shape (entry-id order, the odd last node carried up) is the same in both; it is RFC
// 6962's (split at the largest power of two below n) for every n.
const ProofVersion = 2

// Domain-separation prefixes of version 2 (RFC 6962, 2.1).
const (
	leafPrefix = 0x00
	nodePrefix = 0x01
)

// Leaf is the leaf of e in the current ProofVersion.
func Leaf(e Entry) Hash { return LeafOf(ProofVersion, e) }

// LeafOf is the leaf of e in the given proof version: SHA-256(0x00 || "<entry id>\n<variant>")
// from version 2, SHA-256("<entry id>\n<variant>") in version 1 (UTF-8).
func LeafOf(version int, e Entry) Hash {
	h := sha256.New()
	if version >= 2 {
		h.Write([]byte{leafPrefix})
	}
	h.Write([]byte(e.ID))
	h.Write([]byte{'\n'})
	h.Write([]byte(e.Variant))
	var out Hash
	h.Sum(out[:0])
	return out
}

// nodeOf is SHA-256 of 0x01 (from version 2), the left child's bytes, then the right child's.
func nodeOf(version int, l, r Hash) Hash {
	var b [65]byte
	if version < 2 {
		copy(b[:32], l[:])
		copy(b[32:64], r[:])
		return sha256.Sum256(b[:64])
	}
	b[0] = nodePrefix
	copy(b[1:33], l[:])
	copy(b[33:], r[:])
	return sha256.Sum256(b[:])
}

// SortEntries sorts entries by entry id (byte order), the order of the leaves.
func SortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool { return es[i].ID < es[j].ID })
}

// Tree is the Merkle tree over leaves in entry-id order: Levels[0] are the leaves, the last
// level holds the root alone. A node is SHA-256(0x01 || left || right) (ProofVersion); an odd
// node at the end of a level is carried up unchanged.
type Tree struct {
	Levels [][]Hash
}

// Build makes the tree of the given leaves (already in entry-id order) in the current
// ProofVersion. No leaves: an empty tree whose Root is EmptyRoot.
func Build(leaves []Hash) *Tree { return BuildOf(ProofVersion, leaves) }

// BuildOf is Build in the given proof version (leaves made with LeafOf of the same version).
func BuildOf(version int, leaves []Hash) *Tree {
	t := &Tree{Levels: [][]Hash{leaves}}
	for cur := leaves; len(cur) > 1; {
		next := make([]Hash, (len(cur)+1)/2)
		for i := 0; i+1 < len(cur); i += 2 {
			next[i/2] = nodeOf(version, cur[i], cur[i+1])
		}
		if len(cur)%2 == 1 {
			next[len(next)-1] = cur[len(cur)-1]
		}
		t.Levels = append(t.Levels, next)
		cur = next
	}
	return t
}

// EmptyRoot is the root of a draw without entries: SHA-256 of nothing.
func EmptyRoot() Hash { return sha256.Sum256(nil) }

// Root is the tree's root.
func (t *Tree) Root() Hash {
	top := t.Levels[len(t.Levels)-1]
	if len(top) == 0 {
		return EmptyRoot()
	}
	return top[0]
}

// RootOf builds the tree of sorted entries and returns its root (hex).
func RootOf(sorted []Entry) string { return RootOfVersion(ProofVersion, sorted) }

// RootOfVersion is RootOf in the given proof version.
func RootOfVersion(version int, sorted []Entry) string {
	leaves := make([]Hash, len(sorted))
	for i, e := range sorted {
		leaves[i] = LeafOf(version, e)
	}
	r := BuildOf(version, leaves).Root()
	return hex.EncodeToString(r[:])
}

// Proof is the path of leaf i: the sibling hashes from the leaf up, each "L:<hex>" or
// "R:<hex>" for the side the sibling sits on. A level where the node is carried up (the odd last
// one) adds nothing.
func (t *Tree) Proof(i int) []string {
	path := []string{}
	for _, lv := range t.Levels[:len(t.Levels)-1] {
		switch {
		case i%2 == 1:
			path = append(path, "L:"+hex.EncodeToString(lv[i-1][:]))
		case i+1 < len(lv):
			path = append(path, "R:"+hex.EncodeToString(lv[i+1][:]))
		}
		i /= 2
	}
	return path
}

// Sibling says where the sibling of node i of a level of n nodes sits: its index, and false when
// the node has none (carried up). Servers that keep the levels in a database use it to fetch a
// proof's nodes without building the tree.
func Sibling(i, n int) (int, bool) {
	if i%2 == 1 {
		return i - 1, true
	}
	if i+1 < n {
		return i + 1, true
	}
	return 0, false
}

// LevelSizes are the node counts of each level of a tree over n leaves, leaves first.
func LevelSizes(n int) []int {
	sizes := []int{n}
	for n > 1 {
		n = (n + 1) / 2
		sizes = append(sizes, n)
	}
	return sizes
}

// ErrProof is returned by VerifyProof for a path that does not lead to the root.
var ErrProof = errors.New("draw: the proof does not lead to the root")

// ErrProofShape is returned by VerifyInclusion for a path whose length or sides are not those
// of the leaf's index in a tree of that many entries.
var ErrProofShape = errors.New("draw: the path is not the one of this leaf index in a tree of this size")

// VerifyInclusion checks that entry e, leaf index of a tree of n entries, is in the tree of
// root (hex) in the given proof version: its leaf is recomputed from e (never taken from the
// proof), the path must have exactly one step per level where the node has a sibling, each on
// the side the index says (L when the node is a right child), and the hashes must lead to the
// root. The caller compares e.ID with the entry id it received when it entered: a proof of
// another entrant's entry verifies too.
func VerifyInclusion(version int, e Entry, index, n int, path []string, rootHex string) error {
	if n < 1 || index < 0 || index >= n {
		return fmt.Errorf("draw: leaf index %d of %d entries", index, n)
	}
	var sides []byte
	for l, i, sizes := 0, index, LevelSizes(n); l < len(sizes)-1; l, i = l+1, i/2 {
		if s, ok := Sibling(i, sizes[l]); ok {
			if s < i {
				sides = append(sides, 'L')
			} else {
				sides = append(sides, 'R')
			}
		}
	}
	if len(path) != len(sides) {
		return fmt.Errorf("%w: %d steps, want %d", ErrProofShape, len(path), len(sides))
	}
	for k, p := range path {
		if len(p) == 0 || p[0] != sides[k] {
			return fmt.Errorf("%w: step %d is %q, want side %c", ErrProofShape, k, p, sides[k])
		}
	}
	leaf := LeafOf(version, e)
	return verifyPath(version, leaf, path, rootHex)
}

// VerifyProof checks that leaf (hex) with path leads to root (hex) in the current
// ProofVersion. It does not check the path's shape against a leaf index: VerifyInclusion
// does, and recomputes the leaf from the entry.
func VerifyProof(leafHex string, path []string, rootHex string) error {
	cur, err := parseHash(leafHex)
	if err != nil {
		return fmt.Errorf("draw: leaf: %w", err)
	}
	return verifyPath(ProofVersion, cur, path, rootHex)
}

func verifyPath(version int, cur Hash, path []string, rootHex string) error {
	for _, p := range path {
		side, h, ok := strings.Cut(p, ":")
		sib, err := parseHash(h)
		if !ok || err != nil {
			return fmt.Errorf("draw: path element %q", p)
		}
		switch side {
		case "L":
			cur = nodeOf(version, sib, cur)
		case "R":
			cur = nodeOf(version, cur, sib)
		default:
			return fmt.Errorf("draw: path element %q", p)
		}
	}
	root, err := parseHash(rootHex)
	if err != nil {
		return fmt.Errorf("draw: root: %w", err)
	}
	if cur != root {
		return ErrProof
	}
	return nil
}

func parseHash(s string) (Hash, error) {
	var h Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return h, errors.New("want 64 hex digits")
	}
	copy(h[:], b)
	return h, nil
}

// Rank is an entry's rank key: HMAC-SHA256(seed, entry id). Lower (bytes compared big-endian)
// ranks better.
func Rank(seed []byte, entryID string) Hash {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(entryID))
	var out Hash
	m.Sum(out[:0])
	return out
}

// Ranked is an entry with its rank key.
type Ranked struct {
	Entry
	Key Hash
}

// RankVariants ranks the entries of each variant: the result maps a variant to its entries, best
// first (ties, impossible with distinct ids, fall back to the id). Entry i of a variant's list
// has position i: wave 1 takes positions [0, stock), each next wave the next ones.
func RankVariants(seed []byte, entries []Entry) map[string][]Ranked {
	out := map[string][]Ranked{}
	for _, e := range entries {
		out[e.Variant] = append(out[e.Variant], Ranked{Entry: e, Key: Rank(seed, e.ID)})
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool {
			if c := bytes.Compare(rs[i].Key[:], rs[j].Key[:]); c != 0 {
				return c < 0
			}
			return rs[i].ID < rs[j].ID
		})
	}
	return out
}

// Wave is one wave of one variant as published: its number (from 1), the positions it made
// winners ([From, To) in the variant's ranking) and when it was drawn and its claim ends.
type Wave struct {
	Wave    int    `json:"wave"`
	Variant string `json:"variant"`
	From    int    `json:"from"`
	To      int    `json:"to"`
	At      string `json:"at,omitempty"`
	Until   string `json:"claim_until,omitempty"`
}

// FirstWave is the positions wave 1 makes winners in a variant of n entries and stock units.
func FirstWave(n, stock int) (from, to int) { return 0, min(n, stock) }

// NextWave is the positions the next wave makes winners after a wave that ended at position
// prevTo with unclaimed units left: the next ranks, as many as the units, within n entries.
func NextWave(prevTo, unclaimed, n int) (from, to int) {
	return prevTo, min(n, prevTo+max(unclaimed, 0))
}

// EntryIDFormat is how the edge writes entry ids: the sale's entry counter in 8 lowercase hex
// digits, so that byte order is arrival order (fmt.Sprintf(EntryIDFormat, n)).
const EntryIDFormat = "%08x"
