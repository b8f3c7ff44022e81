package pgarchive

import (
	"context"
	"sync"
)

// job is the ts row updates of one level over one source range, written in
// one transaction together with the level's watermark.
type job struct {
	level      *levelState
	bundle     *bundleState
	gen        uint64 // level.gen when built: an older job is stale
	from, to   int64  // the source range covered, ms; from is the watermark it expects
	latestSlot int64  // the bundle's newest slot after this job
	rows       rows
	points     int
}

// queue is a bounded FIFO of jobs, measured in ts rows. A job counts from
// push until done, so the bound includes the job being written.
type queue struct {
	cap int

	mu      sync.Mutex // guards following
	jobs    []*job     // waiting, oldest first
	rows    int        // cost of waiting and in-flight jobs
	changed chan struct{}
}

func newQueue(capRows int) *queue {
	return &queue{cap: capRows, changed: make(chan struct{})}
}

// signalLocked wakes every waiter.
func (q *queue) signalLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// cost is what j counts against the bound: its rows, and at least one so
// that jobs without rows (they only move the watermark) are bounded too.
func (j *job) cost() int { return max(1, j.rows.Len()) }

// push adds j, waiting while the queue is full. A job larger than the
// whole queue goes in when the queue is empty.
func (q *queue) push(ctx context.Context, j *job) error {
	n := j.cost()
	for {
		q.mu.Lock()
		if q.rows == 0 || q.rows+n <= q.cap {
			q.jobs = append(q.jobs, j)
			q.rows += n
			q.signalLocked()
			q.mu.Unlock()
			return nil
		}
		ch := q.changed
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// pop takes the oldest job, waiting while there is none.
func (q *queue) pop(ctx context.Context) (*job, error) {
	for {
		q.mu.Lock()
		if len(q.jobs) > 0 {
			j := q.jobs[0]
			q.jobs[0] = nil
			q.jobs = q.jobs[1:]
			q.mu.Unlock()
			return j, nil
		}
		ch := q.changed
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

// done releases the rows of a popped job.
func (q *queue) done(j *job) {
	q.mu.Lock()
	q.rows -= j.cost()
	q.signalLocked()
	q.mu.Unlock()
}

// len returns the rows queued or being written.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.rows
}
