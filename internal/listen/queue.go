package listen

import (
	"errors"
	"sync"
	"time"

	"github.com/aerie-db/aerie/internal/positive"
)

// ErrClosed is returned by Queue.Put after Close.
var ErrClosed = errors.New("listen: queue closed")

// Batch is what producers hand to the consumer: items parsed by one
// listener, counted under its name when dropped.
type Batch[T any] struct {
	Listener string
	Items    []T
}

// QueueOptions configure a Queue.
type QueueOptions struct {
	// Size is the number of batches the queue holds before Put blocks and
	// TryPut drops (default 1024).
	Size int
	// Metrics count drops and the queue length (nil: not counted).
	Metrics *Metrics
	// Tick, if set, is called by the consumer goroutine every TickEvery
	// (default 100ms) between batches, and once more after the last batch
	// when the queue closes: a consumer that gathers batches into larger
	// writes flushes them here, so nothing waits longer than TickEvery.
	Tick      func()
	TickEvery time.Duration
}

// DefaultQueueSize is QueueOptions.Size when zero.
const DefaultQueueSize = 1024

// Queue is a bounded queue of batches with one consumer goroutine. TCP
// producers call Put, which blocks while the queue is full (backpressure
// reaches the client through TCP flow control); UDP producers call TryPut,
// which drops and counts a batch that does not fit.
//
// Locking: mu guards closed; Put and TryPut hold it shared while sending, so
// Close (which holds it exclusively to close ch) waits for sends in flight,
// and they complete because the consumer keeps draining ch until it is closed.
type Queue[T any] struct {
	ch      chan Batch[T]
	consume func(Batch[T])
	tick    func()
	every   time.Duration
	metrics *Metrics
	done    chan struct{}

	mu     sync.RWMutex // guards following
	closed bool
}

// NewQueue starts the consumer goroutine, which calls consume for every
// batch in the order they were queued, one at a time. Close stops it.
func NewQueue[T any](o QueueOptions, consume func(Batch[T])) *Queue[T] {
	o.Size = positive.Or(o.Size, DefaultQueueSize)
	o.TickEvery = positive.Or(o.TickEvery, 100*time.Millisecond)
	q := &Queue[T]{
		ch:      make(chan Batch[T], o.Size),
		consume: consume,
		tick:    o.Tick,
		every:   o.TickEvery,
		metrics: o.Metrics,
		done:    make(chan struct{}),
	}
	go q.run()
	return q
}

func (q *Queue[T]) run() {
	defer close(q.done)
	var tick <-chan time.Time
	if q.tick != nil {
		t := time.NewTicker(q.every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case b, ok := <-q.ch:
			if !ok {
				if q.tick != nil {
					q.tick()
				}
				return
			}
			q.metrics.addQueueLen(-1)
			q.consume(b)
		case <-tick:
			q.tick()
		}
	}
}

// Put queues b, blocking while the queue is full. It returns ErrClosed after
// Close (b is then not handed to the consumer). Empty batches are ignored.
func (q *Queue[T]) Put(b Batch[T]) error {
	if len(b.Items) == 0 {
		return nil
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return ErrClosed
	}
	q.metrics.addQueueLen(1)
	q.ch <- b
	return nil
}

// TryPut queues b if there is room and reports whether it did; otherwise
// (or after Close) len(b.Items) is added to the dropped counter of
// b.Listener.
func (q *Queue[T]) TryPut(b Batch[T]) bool {
	if len(b.Items) == 0 {
		return true
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	if !q.closed {
		q.metrics.addQueueLen(1)
		select {
		case q.ch <- b:
			return true
		default:
			q.metrics.addQueueLen(-1)
		}
	}
	q.metrics.addDropped(b.Listener, len(b.Items))
	return false
}

// Len returns the number of batches waiting.
func (q *Queue[T]) Len() int { return len(q.ch) }

// Cap returns the queue's size in batches.
func (q *Queue[T]) Cap() int { return cap(q.ch) }

// Close refuses further batches, waits until the consumer has been handed
// every batch already queued and has returned (and the last Tick, if set),
// and is idempotent. Close the
// listeners that feed the queue first, so that their last batches are not
// refused.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	<-q.done
}
