package gate

import "sync"

// capped is a map safe for concurrent use that bounds its own size: a put
// into a full map empties it first. The gate's memos (URL facts, session
// facts, converted input parts, preludes) all recompute a missing entry
// cheaply, so forgetting everything at once is simpler than an eviction
// order and keeps a flood of distinct keys from growing memory.
type capped[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

// get returns the entry under k, if there is one.
func (c *capped[K, V]) get(k K) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

// put stores v under k, emptying the map first when it holds limit
// entries.
func (c *capped[K, V]) put(k K, v V, limit int) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= limit {
		c.m = make(map[K]V)
	}
	c.m[k] = v
	c.mu.Unlock()
}
