package drawcheck

import (
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/seckilledge/seckill/contract/draw"
)

// docExample reads the worked example of docs/draw.md ("Checking a draw"): the fenced block
// after its marker, one "key  value  comment" per line (columns parted by two spaces or more).
func docExample(t *testing.T) (keys []string, vals map[string]string) {
	t.Helper()
	b, err := os.ReadFile("../../docs/draw.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if empty := draw.EmptyRoot(); !strings.Contains(doc, hex.EncodeToString(empty[:])) {
		t.Error("docs/draw.md does not give the root of a draw without entries")
	}
	_, after, ok := strings.Cut(doc, "<!-- worked example: bench/drawcheck/doc_test.go -->\n```text\n")
	block, _, ok2 := strings.Cut(after, "\n```")
	if !ok || !ok2 {
		t.Fatal("docs/draw.md has no worked example block after its marker")
	}
	cols := regexp.MustCompile(`\s{2,}`)
	vals = map[string]string{}
	for _, line := range strings.Split(block, "\n") {
		f := cols.Split(strings.TrimSpace(line), 3)
		if len(f) < 2 {
			t.Fatalf("example line %q has no value", line)
		}
		if _, dup := vals[f[0]]; dup {
			t.Fatalf("example key %q twice", f[0])
		}
		keys = append(keys, f[0])
		vals[f[0]] = f[1]
	}
	return keys, vals
}

// The worked example is recomputed from its seed, entries and stocks alone: every hash, path,
// rank and wave it shows must be what contract/draw computes, and every step must be shown.
func TestTheWorkedExampleOfTheDocIsTheArithmetic(t *testing.T) {
	keys, doc := docExample(t)
	seed, err := hex.DecodeString(doc["seed"])
	if err != nil || len(seed) != 32 {
		t.Fatalf("the example's seed %q is not 32 bytes of hex", doc["seed"])
	}
	var es []draw.Entry
	for i := 0; ; i++ {
		v, ok := doc[fmt.Sprintf("entry %d", i)]
		if !ok {
			break
		}
		id, variant, _ := strings.Cut(v, " ")
		es = append(es, draw.Entry{ID: id, Variant: variant})
	}
	if len(es) != 3 {
		t.Fatalf("the example has %d entries, the doc promises 3", len(es))
	}
	want := map[string]string{"seed": doc["seed"], "commitment": draw.Commitment(seed)}
	stock := map[string]int{}
	for i, e := range es {
		want[fmt.Sprintf("entry %d", i)] = e.ID + " " + e.Variant
		n, err := strconv.Atoi(doc["stock "+e.Variant])
		if err != nil {
			t.Fatalf("no stock for variant %s", e.Variant)
		}
		stock[e.Variant] = n
		want["stock "+e.Variant] = strconv.Itoa(n)
	}
	leaves := make([]draw.Hash, len(es))
	for i, e := range es {
		leaves[i] = draw.Leaf(e)
	}
	tree := draw.Build(leaves)
	for level, nodes := range tree.Levels {
		for j, h := range nodes {
			k := fmt.Sprintf("node %d.%d", level, j)
			switch {
			case level == 0:
				k = fmt.Sprintf("leaf %d", j)
			case level == len(tree.Levels)-1:
				k = "root"
			}
			want[k] = hex.EncodeToString(h[:])
		}
	}
	if want["root"] != draw.RootOf(es) {
		t.Fatal("the tree's root is not RootOf's")
	}
	for i := range es {
		want[fmt.Sprintf("path %d", i)] = strings.Join(tree.Proof(i), " ")
	}
	for _, e := range es {
		r := draw.Rank(seed, e.ID)
		want["rank "+e.ID] = hex.EncodeToString(r[:])
	}
	// The waves: wave 1 of each variant, and of M a second one after its winner did not buy
	// (so the units unclaimed at the end of wave 1 are the whole stock).
	for v, rs := range draw.RankVariants(seed, es) {
		ids := make([]string, len(rs))
		for i, r := range rs {
			ids[i] = r.ID
		}
		want["ranking "+v] = strings.Join(ids, " ")
		from, to := draw.FirstWave(len(rs), stock[v])
		want["wave "+v+" 1"] = fmt.Sprintf("%d %d %s", from, to, strings.Join(ids[from:to], " "))
		if v == "M" {
			from, to = draw.NextWave(to, stock[v], len(rs))
			want["wave M 2"] = fmt.Sprintf("%d %d %s", from, to, strings.Join(ids[from:to], " "))
		}
	}
	for _, k := range keys {
		if _, ok := want[k]; !ok {
			t.Errorf("the example shows %q, which the test does not know how to check", k)
		}
	}
	for k, v := range want {
		if doc[k] != v {
			t.Errorf("%s: the doc says %q, the arithmetic %q", k, doc[k], v)
		}
	}
	// A proof from the example's paths checks, as a reader following step 7 would find.
	for i := range es {
		if err := verifyExamplePath(es[i], i, len(es), doc[fmt.Sprintf("path %d", i)], doc["root"]); err != nil {
			t.Errorf("path %d of the example: %v", i, err)
		}
	}
}

// verifyExamplePath is step 7 of the doc on one example path.
func verifyExamplePath(e draw.Entry, index, n int, path, root string) error {
	return draw.VerifyInclusion(draw.ProofVersion, e, index, n, strings.Fields(path), root)
}
