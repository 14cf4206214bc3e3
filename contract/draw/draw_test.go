package draw

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

func entries(n int) []Entry {
	es := make([]Entry, n)
	for i := range es {
		es[i] = Entry{ID: fmt.Sprintf(EntryIDFormat, i+1), Variant: fmt.Sprintf("s%d", i%3)}
	}
	return es
}

func TestEveryProofLeadsToTheRootAndATamperedOneDoesNot(t *testing.T) {
	for n := 1; n <= 40; n++ {
		es := entries(n)
		leaves := make([]Hash, n)
		for i, e := range es {
			leaves[i] = Leaf(e)
		}
		tr := Build(leaves)
		root := tr.Root()
		rootHex := hex.EncodeToString(root[:])
		if RootOf(es) != rootHex {
			t.Fatalf("n=%d: RootOf disagrees with Build", n)
		}
		if got := len(tr.Levels); got != len(LevelSizes(n)) {
			t.Fatalf("n=%d: %d levels, LevelSizes says %d", n, got, len(LevelSizes(n)))
		}
		for i := range es {
			path := tr.Proof(i)
			leaf := hex.EncodeToString(leaves[i][:])
			if err := VerifyProof(leaf, path, rootHex); err != nil {
				t.Fatalf("n=%d i=%d: %v", n, i, err)
			}
			other := Leaf(Entry{ID: es[i].ID, Variant: es[i].Variant + "x"})
			if VerifyProof(hex.EncodeToString(other[:]), path, rootHex) == nil {
				t.Fatalf("n=%d i=%d: a changed variant still opens the root", n, i)
			}
			if len(path) > 0 {
				bad := append([]string(nil), path...)
				if bad[0][0] == 'L' {
					bad[0] = "R" + bad[0][1:]
				} else {
					bad[0] = "L" + bad[0][1:]
				}
				if VerifyProof(leaf, bad, rootHex) == nil {
					t.Fatalf("n=%d i=%d: a path with a side swapped still opens the root", n, i)
				}
			}
		}
	}
}

func TestTheTreeOfThreeLeavesCarriesTheOddOneUp(t *testing.T) {
	es := entries(3)
	a, b, c := Leaf(es[0]), Leaf(es[1]), Leaf(es[2])
	node := func(l, r Hash) Hash { return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...)) }
	want := node(node(a, b), c)
	if got := RootOf(es); got != hex.EncodeToString(want[:]) {
		t.Fatalf("root %s, want %s", got, hex.EncodeToString(want[:]))
	}
	leaf := sha256.Sum256([]byte("\x00" + es[0].ID + "\n" + es[0].Variant))
	if leaf != a {
		t.Fatal("leaf is not SHA-256 of 0x00, id, newline, variant")
	}
	// Version 1, as published before proof_version: no prefixes.
	a1 := sha256.Sum256([]byte(es[0].ID + "\n" + es[0].Variant))
	b1, c1 := LeafOf(1, es[1]), LeafOf(1, es[2])
	ab1 := sha256.Sum256(append(a1[:], b1[:]...))
	want1 := sha256.Sum256(append(ab1[:], c1[:]...))
	if LeafOf(1, es[0]) != a1 || RootOfVersion(1, es) != hex.EncodeToString(want1[:]) {
		t.Fatal("version 1 is not the unprefixed tree")
	}
}

// The ways a dishonest server could make a proof lie, each refused by
// VerifyInclusion: an inner node presented as a leaf, a path too long or too short, a side
// that is not the index's, another entrant's proof, and a proof of another version.
func TestAProofCannotBeMadeToLie(t *testing.T) {
	for n := 1; n <= 33; n++ {
		es := entries(n)
		leaves := make([]Hash, n)
		for i, e := range es {
			leaves[i] = Leaf(e)
		}
		tr := Build(leaves)
		root := tr.Root()
		rootHex := hex.EncodeToString(root[:])
		for i, e := range es {
			path := tr.Proof(i)
			if err := VerifyInclusion(ProofVersion, e, i, n, path, rootHex); err != nil {
				t.Fatalf("n=%d i=%d: the honest proof: %v", n, i, err)
			}
			if VerifyInclusion(1, e, i, n, path, rootHex) == nil {
				t.Fatalf("n=%d i=%d: a version 2 proof verifies as version 1", n, i)
			}
			if j := (i + 1) % n; j != i && VerifyInclusion(ProofVersion, e, j, n, path, rootHex) == nil {
				t.Fatalf("n=%d i=%d: verifies at index %d too", n, i, j)
			}
			if len(path) > 0 {
				if VerifyInclusion(ProofVersion, e, i, n, path[:len(path)-1], rootHex) == nil {
					t.Fatalf("n=%d i=%d: a path one step short verifies", n, i)
				}
			}
			if VerifyInclusion(ProofVersion, e, i, n, append(append([]string{}, path...), path...), rootHex) == nil && len(path) > 0 {
				t.Fatalf("n=%d i=%d: a path twice as long verifies", n, i)
			}
		}
		// An inner node of level 1 presented as an entry's leaf, with the rest of the path: the
		// old format opened the root with it; the domain-separated one cannot.
		if n >= 4 {
			inner := tr.Levels[1][0]
			rest := tr.Proof(0)[1:]
			if verifyPath(ProofVersion, inner, rest, rootHex) != nil {
				t.Fatalf("n=%d: the inner node with the rest of the path does not reach the root", n)
			}
			if VerifyProof(hex.EncodeToString(inner[:]), rest, rootHex) != nil {
				t.Fatalf("n=%d: VerifyProof of the inner node (the path does lead to the root)", n)
			}
			for i := range es {
				if VerifyInclusion(ProofVersion, es[i], i, n, rest, rootHex) == nil {
					t.Fatalf("n=%d: an inner node's path verifies as entry %d's", n, i)
				}
			}
		}
	}
	// Version 1 had it: the concatenation of two leaves hashed as a node equals a "leaf"
	// whose bytes are those 64 bytes, so an inner node verified as a leaf of a shorter path.
	es := entries(4)
	l1 := make([]Hash, 4)
	for i, e := range es {
		l1[i] = LeafOf(1, e)
	}
	t1 := BuildOf(1, l1)
	r1 := t1.Root()
	inner := t1.Levels[1][0]
	if verifyPath(1, inner, t1.Proof(0)[1:], hex.EncodeToString(r1[:])) != nil {
		t.Fatal("version 1: an inner node does not open the root (the attack the new version stops)")
	}
	if VerifyInclusion(1, es[0], 0, 4, t1.Proof(0)[1:], hex.EncodeToString(r1[:])) == nil {
		t.Fatal("version 1: the shape check lets a short path through")
	}
	// Bad indexes and sizes.
	for _, c := range [][2]int{{-1, 4}, {4, 4}, {0, 0}} {
		if VerifyInclusion(ProofVersion, es[0], c[0], c[1], nil, hex.EncodeToString(r1[:])) == nil {
			t.Fatalf("index %d of %d accepted", c[0], c[1])
		}
	}
}

func TestRankingIsTheHMACOrderPerVariant(t *testing.T) {
	seed := []byte("0123456789abcdef0123456789abcdef")
	es := entries(30)
	rv := RankVariants(seed, es)
	total := 0
	for v, rs := range rv {
		total += len(rs)
		for i := 1; i < len(rs); i++ {
			if string(rs[i-1].Key[:]) > string(rs[i].Key[:]) {
				t.Fatalf("variant %s not ascending at %d", v, i)
			}
			if rs[i].Variant != v {
				t.Fatalf("entry of %s ranked in %s", rs[i].Variant, v)
			}
		}
	}
	if total != 30 {
		t.Fatalf("ranked %d of 30", total)
	}
	if !Opens(hex.EncodeToString(seed), Commitment(seed)) || Opens("00", Commitment(seed)) {
		t.Fatal("commitment does not open with its seed only")
	}
	if f, to := NextWave(3, 2, 4); f != 3 || to != 4 {
		t.Fatalf("next wave [%d,%d), want [3,4)", f, to)
	}
}
