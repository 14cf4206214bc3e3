package salecache

import (
	"strconv"
	"sync"
	"testing"
)

// A cache named more sales than Max by concurrent requests never holds more than Max, and
// keeps the sale stored last.
func TestTheCacheHoldsAtMostMaxSales(t *testing.T) {
	var c Cache[*int]
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range Max {
				v := i
				c.Store(strconv.Itoa(g)+"-"+strconv.Itoa(i), &v)
			}
		}()
	}
	wg.Wait()
	held := 0
	c.m.Range(func(any, any) bool { held++; return true })
	if held > Max {
		t.Fatalf("the cache holds %d sales, want at most %d", held, Max)
	}
	one := 1
	c.Store("last", &one)
	if v, ok := c.Load("last"); !ok || *v != 1 {
		t.Fatalf("Load(last) = %v, %v; want the value stored", v, ok)
	}
	c.Store("last", &one) // a sale held already does not count again
	if c.n > Max {
		t.Fatalf("n = %d beyond Max", c.n)
	}
	c.Clear()
	if _, ok := c.Load("last"); ok {
		t.Fatal("Clear kept a sale")
	}
}
