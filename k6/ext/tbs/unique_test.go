package tbs

import "testing"

func TestUniqueAcrossLanes(t *testing.T) {
	seen := map[uint32]bool{}
	for lane := 0; lane < 3; lane++ {
		u := (&Module{r: newRoot()}).Unique("u", 12345, 678, 3, lane)
		for i := 0; i < 20000; i++ {
			v := u.Next()
			if seen[v] {
				t.Fatalf("lane %d gave %d twice", lane, v)
			}
			seen[v] = true
		}
	}
	// one lane of one is sysbench's own sequence: permute(permute(index) + offset) ^ ...
	u := (&Module{r: newRoot()}).Unique("u", 1, 2, 1, 0)
	start := permute(permute(1) + 0x682f0161)
	offset := permute(permute(2) + 0x46790905)
	for i := uint32(0); i < 5; i++ {
		want := permute((permute(start+i) + offset) ^ 0x5bf03635)
		if got := u.Next(); got != want {
			t.Fatalf("index %d: %d want %d", i, got, want)
		}
	}
}
