package memory

import (
	"fmt"

	"github.com/aerie-db/aerie/internal/invariants"
)

// Poison is the byte an invariants build fills recycled blocks (and new
// pages) with, so that reading or writing freed memory shows.
const Poison byte = 0xDB

// PoisonRun is how many consecutive Poison bytes CheckNotPoisoned takes as
// evidence of recycled memory.
const PoisonRun = 16

func poison(b []byte) {
	for i := range b {
		b[i] = Poison
	}
}

// CheckNotPoisoned returns an error wrapping ErrPoisoned if b, a copy of
// block bytes a reader read under a Guard, holds a run of PoisonRun Poison
// bytes: the block was recycled while the reader could still see it. Only
// invariants builds poison memory; in other builds it returns nil, since
// real data may hold such a run.
func CheckNotPoisoned(b []byte) error {
	if !invariants.Enabled {
		return nil
	}
	if off := findPoisonRun(b); off >= 0 {
		return fmt.Errorf("memory: %d bytes at offset %d: %w", PoisonRun, off, ErrPoisoned)
	}
	return nil
}

// findPoisonRun returns the offset of the first run of PoisonRun Poison
// bytes in b, or -1.
func findPoisonRun(b []byte) int {
	run := 0
	for i, c := range b {
		if c != Poison {
			run = 0
			continue
		}
		if run++; run == PoisonRun {
			return i + 1 - PoisonRun
		}
	}
	return -1
}

// findPoisonGap returns the offset of the first byte of b that is not
// Poison, or -1: a recycled block that is no longer all poison was written
// after it was freed.
func findPoisonGap(b []byte) int {
	for i, c := range b {
		if c != Poison {
			return i
		}
	}
	return -1
}
