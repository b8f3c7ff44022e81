package head

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/aerie-db/aerie/internal/memory"
)

// TestChain stores tuples of every size up to MinBlockSize, with empty
// tuples between them, in chains of both block size bounds, and reads each
// back through a view: a tuple never crosses a block, and views taken
// midway see exactly what was written before them.
func TestChain(t *testing.T) {
	for _, bs := range []int{MinBlockSize, MaxBlockSize} {
		t.Run(fmt.Sprint(bs), func(t *testing.T) {
			m, err := memory.New(memory.Options{PageSize: 16 * bs, BlockSize: bs})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(bs), 1))
			var c chain
			var want [][]byte // nil: skipped
			var views []chainView
			for k := range 3000 {
				if rng.IntN(5) == 0 {
					c.skip()
					want = append(want, nil)
				} else {
					enc := make([]byte, 1+rng.IntN(MinBlockSize))
					for i := range enc {
						enc[i] = byte(rng.Uint32())
					}
					c.append(m, 1, enc)
					want = append(want, enc)
				}
				if k%500 == 0 || k < 60 {
					views = append(views, c.view())
				}
			}
			views = append(views, c.view())
			for _, v := range views {
				if !v.valid(m) {
					t.Fatal("live chain invalid")
				}
				for k := range v.offs {
					if want[k] == nil {
						continue
					}
					if got := v.tuple(m, k); !bytes.HasPrefix(got, want[k]) {
						t.Fatalf("tuple %d of %d: got %x, want prefix %x", k, len(v.offs), got, want[k])
					}
				}
			}
			m.HardRelease(1)
			if views[0].valid(m) {
				t.Error("hard-released chain still valid")
			}
		})
	}
}
