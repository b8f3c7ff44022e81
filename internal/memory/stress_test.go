package memory

import (
	"errors"
	"flag"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var stressDuration = flag.Duration("memory.stress", 0, "TestStress run time (default 2s, 300ms with -short)")

// stressIndex stands in for the head's index: the last refs published by
// writers, hard-released or not (a reader finding a released one must see
// it invalid).
type stressIndex struct {
	mu   sync.Mutex
	refs []Ref
	next int
}

func (x *stressIndex) publish(r Ref) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.refs) < cap(x.refs) {
		x.refs = append(x.refs, r)
		return
	}
	x.refs[x.next] = r
	x.next = (x.next + 1) % len(x.refs)
}

func (x *stressIndex) sample(rng *rand.Rand, dst []Ref, n int) []Ref {
	x.mu.Lock()
	defer x.mu.Unlock()
	for range min(n, len(x.refs)) {
		dst = append(dst, x.refs[rng.IntN(len(x.refs))])
	}
	return dst
}

type stressCounts struct {
	allocs, oom, collisions, releasedErr, lostRace atomic.Int64
	reads, invalid, staleReads                     atomic.Int64
}

// TestStress runs writers, readers, a flusher and a reclaimer against one
// small manager. Writers allocate for a current partition that moves on
// every 32 allocations and fill each block with a pattern encoding its Ref.
// Readers check random refs, fresh and stale, under a guard and verify every
// valid block they read, twice, across a yield: any mismatch, poison above
// all, means a block was recycled or reused under a reader. The flusher
// soft-releases partitions as the writers leave them and hard-releases them
// two partitions later; the reclaimer and the background reclaimer advance
// and reclaim, and the limit keeps the pressure policy and ErrOutOfMemory
// busy. It runs for -memory.stress and at least until versions wrapped
// twice. Run it with -race, and with -tags invariants to poison.
func TestStress(t *testing.T) {
	d := *stressDuration
	if d == 0 {
		d = 2 * time.Second
		if testing.Short() {
			d = 300 * time.Millisecond
		}
	}
	const (
		writers        = 3
		readers        = 4
		allocsPerPart  = 32
		minPartitions  = 2*64 + 4
		safetyDeadline = time.Minute
	)
	// 64 blocks a page, 256 blocks in all, pressure above 128: a few
	// partitions fill it. Fewer slots than readers, so slots are shared.
	m := newManager(t, Options{PageSize: 16 << 10, BlockSize: 256, Limit: 4 * 16 << 10, ReclaimThreshold: 0.5, ReaderSlots: 3})
	if err := m.Start(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	idx := &stressIndex{refs: make([]Ref, 0, 160)}
	var (
		cur    atomic.Int64
		nAlloc atomic.Int64
		// sealMu stands in for the head's SealPartition: writers allocate
		// (not fill) under its read lock, and the flusher seals a
		// partition under its write lock before it releases it, so no
		// writer holding an old partition number reopens a partition the
		// manager already retired (it would stay live, and every later
		// opening would collide with it: CI saw that livelock).
		sealMu  sync.RWMutex
		sealed  int64
		c       stressCounts
		stop    = make(chan struct{})
		failed  atomic.Bool
		wg      sync.WaitGroup
		stopped = func() bool {
			select {
			case <-stop:
				return true
			default:
				return false
			}
		}
	)
	fail := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			t.Errorf(format, args...)
		}
	}

	for w := range writers {
		wg.Go(func() {
			for !stopped() {
				sealMu.RLock()
				p := cur.Load()
				if p < sealed {
					fail("writer %d: partition %d is below the sealed %d", w, p, sealed)
				}
				g := m.Enter() // HardRelease may overtake us while we fill
				id, v, err := m.Alloc(p)
				sealMu.RUnlock() // the fill may be overtaken by a release
				switch {
				case errors.Is(err, ErrOutOfMemory):
					c.oom.Add(1)
				case errors.Is(err, ErrVersionCollision):
					c.collisions.Add(1)
				case errors.Is(err, ErrReleased):
					c.releasedErr.Add(1)
				case err != nil:
					fail("writer %d: Alloc(%d): %v", w, p, err)
				}
				if err != nil {
					g.Exit()
					runtime.Gosched()
					continue
				}
				r := MakeRef(id, v)
				b, ok := m.Bytes(r)
				if !ok {
					c.lostRace.Add(1)
					g.Exit()
					continue
				}
				fillPattern(b, r)
				idx.publish(r)
				g.Exit()
				c.allocs.Add(1)
				if nAlloc.Add(1)%allocsPerPart == 0 {
					cur.CompareAndSwap(p, p+1)
				}
			}
		})
	}

	for rd := range readers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(rd), 42))
			buf := make([]byte, 256)
			var refs, stale []Ref
			for i := 0; !stopped(); i++ {
				g := m.Enter()
				refs = idx.sample(rng, refs[:0], 8)
				for j, r := range append(refs, stale...) {
					b, ok := m.Bytes(r)
					if !ok {
						c.invalid.Add(1)
						continue
					}
					copy(buf, b)
					if err := CheckNotPoisoned(buf); err != nil {
						fail("reader %d: %v: %v", rd, r, err)
					}
					if off := checkPattern(buf, r); off >= 0 {
						fail("reader %d: %v (epoch %d): word at byte %d is %x", rd, r, g.Epoch(), off, buf[off:off+8])
					}
					if i%4 == 0 {
						// Give the flusher and reclaimer a chance to release
						// and try to recycle the block under us.
						runtime.Gosched()
						if off := checkPattern(b, r); off >= 0 {
							fail("reader %d: %v changed at byte %d while registered", rd, r, off)
						}
					}
					c.reads.Add(1)
					if j >= len(refs) {
						c.staleReads.Add(1)
					}
				}
				g.Exit()
				// Keep a few refs to check again under a later guard.
				stale = append(stale[:0], refs[:min(2, len(refs))]...)
			}
		})
	}

	wg.Go(func() { // flusher
		var soft, hard int64
		for !stopped() {
			c := cur.Load()
			for ; soft < c; soft++ {
				sealMu.Lock()
				sealed = soft + 1
				sealMu.Unlock()
				m.SoftRelease(soft)
			}
			for ; hard < c-2; hard++ {
				m.HardRelease(hard)
			}
			time.Sleep(50 * time.Microsecond)
		}
	})

	wg.Go(func() { // reclaimer
		for i := 0; !stopped(); i++ {
			m.Advance()
			m.Reclaim()
			if i%64 == 0 {
				if err := m.Check(); err != nil {
					fail("%v", err)
				}
			}
			time.Sleep(100 * time.Microsecond)
		}
	})

	start := time.Now()
	for time.Since(start) < d || (cur.Load() < minPartitions && time.Since(start) < safetyDeadline && !failed.Load()) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	s := m.Stats()
	t.Logf("%v: %d partitions (newest version %d), %d allocs (%d out of memory, %d version collisions, %d released, %d lost races), %d reads (%d stale), %d invalid, %d reclaimed, %d released by pressure, epoch %d",
		time.Since(start).Round(time.Millisecond), cur.Load(), s.NewestVersion, c.allocs.Load(), c.oom.Load(), c.collisions.Load(), c.releasedErr.Load(), c.lostRace.Load(),
		c.reads.Load(), c.staleReads.Load(), c.invalid.Load(), s.ReclaimedBlocks, s.ReleasedBlocks, s.Epoch)
	if failed.Load() {
		return
	}
	if cur.Load() < minPartitions {
		t.Errorf("only %d partitions in %v: versions did not wrap twice", cur.Load(), safetyDeadline)
	}
	if c.reads.Load() == 0 || c.invalid.Load() == 0 || s.ReclaimedBlocks == 0 {
		t.Errorf("stress did nothing useful: %d valid reads, %d invalid, %d reclaimed", c.reads.Load(), c.invalid.Load(), s.ReclaimedBlocks)
	}

	// Drain: everything released and recycled, nothing lost.
	for p := range cur.Load() + 1 {
		m.HardRelease(p)
	}
	m.Advance()
	m.Reclaim()
	if s := m.Stats(); s.LiveBlocks+s.HotBlocks+s.CoolingBlocks != 0 || len(s.Partitions) != 0 || s.FreeBlocks != s.Pages*64 {
		t.Errorf("after draining: %+v", s)
	}
}
