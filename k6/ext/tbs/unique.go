package tbs

import "sync/atomic"

// Unique is sysbench.rand.unique() (sb_rand.c, after preshing's RandomSequence): one
// index for the whole process; `stride` and `lane` interleave the indices of several
// processes (load generators) so that no two of them ever give the same number.
type Unique struct {
	index        atomic.Uint32
	offset       uint32
	stride, lane uint32
}

const uniquePrime = uint32(4294967291)

func permute(x uint32) uint32 {
	if x >= uniquePrime {
		return x
	}
	residue := uint32((uint64(x) * uint64(x)) % uint64(uniquePrime))
	if x <= uniquePrime/2 {
		return residue
	}
	return uniquePrime - residue
}

// Next returns the next number of the sequence.
func (u *Unique) Next() uint32 {
	i := u.index.Add(1) - 1
	return permute((permute(i*u.stride+u.lane) + u.offset) ^ 0x5bf03635)
}

// Unique returns the process-wide sequence called name, seeded as sysbench seeds it
// (rand_unique_seed(index, offset)) on first use.
func (m *Module) Unique(name string, seedIndex, seedOffset uint32, stride, lane int) *Unique {
	return shared(m.r, m.r.uniques, name, func() *Unique {
		if stride < 1 {
			stride = 1
		}
		u := &Unique{stride: uint32(stride), lane: uint32(lane)}
		// sysbench's start index is permute(permute(index) + 0x682f0161); with a stride the
		// sequence index i maps to start + i*stride + lane, so the start is divided out.
		start := permute(permute(seedIndex) + 0x682f0161)
		u.index.Store(start / uint32(stride))
		u.offset = permute(permute(seedOffset) + 0x46790905)
		return u
	})
}
