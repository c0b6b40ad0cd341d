package gate

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// OPA keeps two caches per evaluation: the values of the rules evaluated so
// far (the virtual cache) and the base documents read from the store (the
// base cache). Its own are tries of hash maps, built anew for every
// evaluation: a quarter of a fast-path decision's allocations. A decision
// caches a few dozen refs at most, so flat lists scanned from the end
// (where refs differ: they share their data.aegis.browser prefix) serve
// it with no allocation once warm, and a pool hands them from one
// evaluation to the next. Both caches only ever hold what the evaluation
// computed or read itself; the store is never written after the policy
// loads, so a cached base document cannot go stale.

// evalCaches is one evaluation's pair of caches.
type evalCaches struct {
	virtual flatVirtualCache
	base    flatBaseCache
}

// refArena holds copies of the refs a cache is keyed by: the evaluator
// passes refs that alias buffers it later reuses, so a cache must copy
// them (OPA's own tries copy their terms into map keys). Copies are
// appended, never changed, so a copy stays valid when the arena grows.
type refArena struct{ terms []*ast.Term }

func (a *refArena) clone(ref ast.Ref) ast.Ref {
	start := len(a.terms)
	a.terms = append(a.terms, ref...)
	return a.terms[start:len(a.terms):len(a.terms)]
}

func (a *refArena) reset() {
	clear(a.terms)
	a.terms = a.terms[:0]
}

// maxPooledEntries bounds what a pooled cache keeps between evaluations, so
// that one unusual evaluation does not pin a large slice.
const maxPooledEntries = 512

var cachePool = sync.Pool{New: func() any { return new(evalCaches) }}

func getCaches() *evalCaches { return cachePool.Get().(*evalCaches) }

// putCaches empties c, dropping every reference to the evaluation's terms,
// and pools it.
func putCaches(c *evalCaches) {
	if cap(c.virtual.entries) > maxPooledEntries || cap(c.base.entries) > maxPooledEntries ||
		cap(c.virtual.arena.terms) > 8*maxPooledEntries || cap(c.base.arena.terms) > 8*maxPooledEntries {
		return
	}
	c.virtual.arena.reset()
	c.base.arena.reset()
	clear(c.virtual.entries)
	c.virtual.entries = c.virtual.entries[:0]
	c.virtual.frames = c.virtual.frames[:0]
	c.virtual.start = 0
	clear(c.base.entries)
	c.base.entries = c.base.entries[:0]
	cachePool.Put(c)
}

// sameRef reports whether two refs are equal, comparing from the end.
func sameRef(a, b ast.Ref) bool {
	if len(a) != len(b) {
		return false
	}
	for i := len(a) - 1; i >= 0; i-- {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// flatVirtualCache implements topdown.VirtualCache: a stack of frames over
// one list of entries. A pushed frame starts empty and sees nothing of the
// frames below it; popping it drops its entries.
type flatVirtualCache struct {
	arena   refArena
	entries []virtualEntry
	frames  []int // the start of each frame below the active one
	start   int   // the active frame's first entry
}

type virtualEntry struct {
	ref       ast.Ref
	value     *ast.Term
	undefined bool
}

// Push starts a new, empty frame.
func (c *flatVirtualCache) Push() {
	c.frames = append(c.frames, c.start)
	c.start = len(c.entries)
}

// Pop drops the active frame and its entries.
func (c *flatVirtualCache) Pop() {
	if len(c.frames) == 0 {
		return
	}
	clear(c.entries[c.start:])
	c.entries = c.entries[:c.start]
	c.start = c.frames[len(c.frames)-1]
	c.frames = c.frames[:len(c.frames)-1]
}

func (c *flatVirtualCache) find(ref ast.Ref) int {
	for i := len(c.entries) - 1; i >= c.start; i-- {
		if sameRef(c.entries[i].ref, ref) {
			return i
		}
	}
	return -1
}

// Get returns the cached value of ref: (value, false) when it is cached,
// (nil, true) when it is cached as undefined, (nil, false) when it is not
// cached.
func (c *flatVirtualCache) Get(ref ast.Ref) (*ast.Term, bool) {
	i := c.find(ref)
	if i < 0 {
		return nil, false
	}
	e := c.entries[i]
	if e.undefined {
		return nil, true
	}
	return e.value, false
}

// Put caches ref's value; a nil value records ref as undefined, which a
// later value does not undo (the semantics of OPA's own cache).
func (c *flatVirtualCache) Put(ref ast.Ref, value *ast.Term) {
	if i := c.find(ref); i >= 0 {
		// As OPA's cache does: a ref once recorded undefined stays so.
		if value != nil {
			c.entries[i].value = value
		} else {
			c.entries[i].undefined = true
		}
		return
	}
	c.entries = append(c.entries, virtualEntry{ref: c.arena.clone(ref), value: value, undefined: value == nil})
}

// Keys returns the refs the active frame holds a value for.
func (c *flatVirtualCache) Keys() []ast.Ref {
	var keys []ast.Ref
	for _, e := range c.entries[c.start:] {
		if e.value != nil {
			keys = append(keys, e.ref)
		}
	}
	return keys
}

// flatBaseCache implements topdown.BaseCache: the base documents read so
// far, each under the ref it was read at. A document cached under a
// prefix of a ref answers for the ref (the part of it the rest of the ref
// names); putting a document drops those cached under refs it contains.
type flatBaseCache struct {
	arena   refArena
	entries []baseEntry
}

type baseEntry struct {
	ref   ast.Ref
	value ast.Value
}

// Get returns the base document at ref, or nil when it is not cached.
func (c *flatBaseCache) Get(ref ast.Ref) ast.Value {
	for _, e := range c.entries {
		if len(e.ref) > len(ref) || !sameRef(e.ref, ref[:len(e.ref)]) {
			continue
		}
		if len(e.ref) == len(ref) {
			return e.value
		}
		v, err := e.value.Find(ref[len(e.ref):])
		if err != nil {
			return nil
		}
		return v
	}
	return nil
}

// Put caches the base document at ref.
func (c *flatBaseCache) Put(ref ast.Ref, value ast.Value) {
	kept := c.entries[:0]
	for _, e := range c.entries {
		if len(e.ref) >= len(ref) && sameRef(e.ref[:len(ref)], ref) {
			continue // ref contains it (or is it): the new document replaces it
		}
		kept = append(kept, e)
	}
	clear(c.entries[len(kept):])
	c.entries = append(kept, baseEntry{ref: c.arena.clone(ref), value: value})
}
