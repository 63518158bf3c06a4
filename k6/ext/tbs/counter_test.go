package tbs

import (
	"sync"
	"testing"
)

// Max keeps the highest value any caller gave, whatever the order of concurrent calls, and
// never lowers it.
func TestCounterMax(t *testing.T) {
	var c Counter
	if got := c.Max(5); got != 5 {
		t.Fatalf("Max(5) on 0 = %d, want 5", got)
	}
	if got := c.Max(3); got != 5 {
		t.Fatalf("Max(3) on 5 = %d, want 5 (never lowered)", got)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				c.Max(int64(g*1000 + i))
			}
		}(g)
	}
	wg.Wait()
	if got := c.Get(); got != 7999 {
		t.Fatalf("after concurrent Max calls up to 7999: %d", got)
	}
	if got := c.Add(1); got != 8000 {
		t.Fatalf("Add(1) after Max = %d, want 8000", got)
	}
}
