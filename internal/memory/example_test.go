package memory_test

import (
	"fmt"

	"github.com/aerie-db/aerie/internal/memory"
)

// A writer fills a block of the current partition and publishes its Ref; a
// reader checks the Ref under a guard and falls back to disk once the
// partition is hard-released; the block is recycled after the reader exits
// and the epoch advances.
func Example() {
	m, err := memory.New(memory.Options{PageSize: 4096, BlockSize: 256})
	if err != nil {
		panic(err)
	}
	const partition = 1795296000000 / 7200000 // 2-hour partition of the sample

	id, v, err := m.Alloc(partition)
	if err != nil {
		panic(err) // ErrOutOfMemory: keep the data in Go memory instead
	}
	ref := memory.MakeRef(id, v)
	b, _ := m.Bytes(ref)
	copy(b, "encoded tuples")

	g := m.Enter()
	m.SoftRelease(partition) // flushed: still served from memory
	if b, ok := m.Bytes(ref); ok {
		fmt.Printf("memory: %s\n", b[:14])
	}
	m.HardRelease(partition)
	fmt.Println("valid after hard release:", m.Valid(ref))

	m.Advance()
	_, recycled := m.Reclaim()
	fmt.Println("recycled while the reader is registered:", recycled)
	g.Exit()
	_, recycled = m.Reclaim()
	fmt.Println("recycled after it exits:", recycled)
	// Output:
	// memory: encoded tuples
	// valid after hard release: false
	// recycled while the reader is registered: 0
	// recycled after it exits: 1
}
