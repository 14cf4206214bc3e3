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
	ab := sha256.Sum256(append(a[:], b[:]...))
	want := sha256.Sum256(append(ab[:], c[:]...))
	if got := RootOf(es); got != hex.EncodeToString(want[:]) {
		t.Fatalf("root %s, want %s", got, hex.EncodeToString(want[:]))
	}
	leaf := sha256.Sum256([]byte(es[0].ID + "\n" + es[0].Variant))
	if leaf != a {
		t.Fatal("leaf is not SHA-256 of id newline variant")
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
