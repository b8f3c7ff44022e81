package bucket

import (
	"container/list"
	"sync"
)

// lru keeps values up to a budget of bytes (each value's size given at
// put), the least recently used evicted first. It is safe for concurrent
// use (mu guards everything below it). A nil *lru keeps nothing.
type lru[K comparable, V any] struct {
	mu     sync.Mutex
	budget int64
	size   int64
	order  *list.List // of *lruEntry[K, V], most recent first
	byKey  map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key  K
	val  V
	size int64
}

func newLRU[K comparable, V any](budget int64) *lru[K, V] {
	return &lru[K, V]{budget: budget, order: list.New(), byKey: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	var zero V
	if c == nil {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry[K, V]).val, true
}

// put keeps v under k unless k is there already or size alone exceeds the
// budget, then evicts down to the budget.
func (c *lru[K, V]) put(k K, v V, size int64) {
	if c == nil || size > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[k]; ok {
		return
	}
	c.byKey[k] = c.order.PushFront(&lruEntry[K, V]{key: k, val: v, size: size})
	c.size += size
	for c.size > c.budget {
		el := c.order.Back()
		e := el.Value.(*lruEntry[K, V])
		c.order.Remove(el)
		delete(c.byKey, e.key)
		c.size -= e.size
	}
}

// remove drops k.
func (c *lru[K, V]) remove(k K) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[k]; ok {
		c.order.Remove(el)
		delete(c.byKey, k)
		c.size -= el.Value.(*lruEntry[K, V]).size
	}
}

// bytes returns the sum of the sizes kept.
func (c *lru[K, V]) bytes() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
