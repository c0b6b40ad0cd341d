package schemas

import (
	"fmt"
	"math/bits"
	"strconv"
)

// ValidateTape validates value i of a Tape (0: the document) exactly as
// ValidateValue validates the same value parsed, with the same errors, but
// without building it: the compiled schema is walked over the tape. The
// tape walk and the walk over parsed values are held to the general
// validator by the same tests (vectors, their mutations, fuzzing). On a
// failure the value is built and ValidateValue gives its account; should
// it accept what the tape walk refused, the refusal stands (fail closed).
func (v *Validator) ValidateTape(t *Tape, i int) (err error) {
	if v.fast != nil && v.tapeOK(t, i) {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = &ValidationError{Kind: Kind(v.name), Problems: []Problem{{Keyword: "type", Reason: fmt.Sprintf("validator failed: %v", r)}}}
		}
	}()
	if err := v.ValidateValue(t.Value(i)); err != nil || v.fast == nil {
		return err
	}
	return &ValidationError{Kind: Kind(v.name), Problems: []Problem{{Keyword: "tape", Reason: "refused by the compiled validator"}}}
}

// ValidateTapeCompiled validates value i of t with the compiled validator's
// tape walk alone and returns nil or a *ValidationError that names no
// place. It is for tests and benchmarks; a validator whose schema does not
// compile returns Compiled's error.
func (v *Validator) ValidateTapeCompiled(t *Tape, i int) error {
	if v.fast == nil {
		return v.fastErr
	}
	if !v.tapeOK(t, i) {
		return &ValidationError{Kind: Kind(v.name), Problems: []Problem{{Keyword: "tape", Reason: "refused by the compiled validator"}}}
	}
	return nil
}

// tapeOK runs the tape walk; a panic (a tape no parser builds) refuses.
func (v *Validator) tapeOK(t *Tape, i int) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			ok = false
		}
	}()
	if i < 0 || i >= len(t.vals) {
		return false
	}
	return v.fast.okT(t, i)
}

// okT reports whether value i of t is valid under n: check's verdict,
// over the tape.
func (n *node) okT(t *Tape, i int) bool {
	if n.boolean != nil {
		return *n.boolean
	}
	if n.ref != nil && !n.ref.okT(t, i) {
		return false
	}
	v := &t.vals[i]
	if len(n.types) > 0 && n.kinds&(1<<v.kind) == 0 &&
		!(n.integer && v.kind == TapeNumber && isIntegerText(string(t.raw(i)))) {
		return false
	}
	if n.konst != nil && !t.equalValue(i, n.konst[0]) {
		return false
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if t.equalValue(i, e) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	switch v.kind {
	case TapeString:
		if !n.stringOKT(t, i) {
			return false
		}
	case TapeObject:
		if !n.objectOKT(t, i) {
			return false
		}
	case TapeArray:
		if !n.arrayOKT(t, i) {
			return false
		}
	case TapeNumber:
		if !n.numberOKT(t.raw(i)) {
			return false
		}
	}
	for k := range n.dispatch {
		if !n.dispatch[k].okT(t, i) {
			return false
		}
	}
	for _, s := range n.allOfRest {
		if !s.okT(t, i) {
			return false
		}
	}
	if n.ifS != nil {
		if n.ifS.okT(t, i) {
			if n.thenS != nil && !n.thenS.okT(t, i) {
				return false
			}
		} else if n.elseS != nil && !n.elseS.okT(t, i) {
			return false
		}
	}
	return n.not == nil || !n.not.okT(t, i)
}

func (n *node) stringOKT(t *Tape, i int) bool {
	v := &t.vals[i]
	// As checkString: count characters only when the byte length cannot
	// decide.
	if n.maxLen >= 0 && int(v.n) > n.maxLen && t.runes(i) > n.maxLen {
		return false
	}
	if n.minLen >= 0 && int(v.n) < 4*n.minLen && t.runes(i) < n.minLen {
		return false
	}
	if n.pattern != nil {
		if v.flags&tapeEscaped == 0 {
			if !n.matchB(t.raw(i)) {
				return false
			}
		} else if !n.match(t.str(i)) {
			return false
		}
	}
	return n.format == nil || n.format(t.str(i))
}

func (n *node) numberOKT(x []byte) bool {
	return boundOK(x, n.minimum, func(c int) bool { return c >= 0 }) &&
		boundOK(x, n.maximum, func(c int) bool { return c <= 0 }) &&
		boundOK(x, n.exclMin, func(c int) bool { return c > 0 }) &&
		boundOK(x, n.exclMax, func(c int) bool { return c < 0 })
}

// boundOK reports whether the number x holds against a bound (nil:
// absent), as checkBound does; the doubles decide without a copy of x when
// they can.
func boundOK(x []byte, b *bound, holds func(int) bool) bool {
	if b == nil {
		return true
	}
	if b.exact {
		if f, err := strconv.ParseFloat(string(x), 64); err == nil && f != b.f {
			if f < b.f {
				return holds(-1)
			}
			return holds(1)
		}
	}
	c, ok := b.cmp(string(x))
	return ok && holds(c)
}

func (n *node) objectOKT(t *Tape, i int) bool {
	if n.props == nil && n.addl == nil || n.addl == nil && len(n.propList) <= 2 {
		// Required names, and a few declared properties (an if's, a
		// then's): look them up, once when also required (a
		// discriminator: {"required": ["type"], "properties": {"type":
		// {"const": ...}}}).
		lastName, lastJ := "", -1
		for _, r := range n.required {
			if lastName, lastJ = r, t.Member(i, r); lastJ < 0 {
				return false
			}
		}
		for _, p := range n.propList {
			j := lastJ
			if p.name != lastName {
				j = t.Member(i, p.name)
			}
			if j >= 0 && !p.s.okT(t, j) {
				return false
			}
		}
		return true
	}
	// Every member: its declared schema, or additionalProperties; the
	// required names among the declared ones are checked off on the way.
	var seen uint64
	for k, end := i+1, int(t.vals[i].next); k < end; k = int(t.vals[k+1].next) {
		var p tapeProp
		var declared bool
		if t.vals[k].flags&tapeEscaped == 0 {
			p, declared = n.tapeProps[string(t.raw(k))]
		} else {
			p, declared = n.tapeProps[t.str(k)]
		}
		switch {
		case declared:
			seen |= p.bit
		case n.addl == nil:
			continue
		default:
			p.s = n.addl
		}
		if !p.s.okT(t, k+1) {
			return false
		}
	}
	if seen&n.requiredBits != n.requiredBits {
		return false
	}
	for _, r := range n.requiredOther {
		if t.Member(i, r) < 0 {
			return false
		}
	}
	return true
}

func (n *node) arrayOKT(t *Tape, i int) bool {
	v := &t.vals[i]
	if n.minItems >= 0 && int(v.n) < n.minItems || n.maxItems >= 0 && int(v.n) > n.maxItems {
		return false
	}
	if n.unique {
		for a := i + 1; a < int(v.next); a = int(t.vals[a].next) {
			for b := int(t.vals[a].next); b < int(v.next); b = int(t.vals[b].next) {
				if t.equal(a, b) {
					return false
				}
			}
		}
	}
	if n.items != nil {
		for k := i + 1; k < int(v.next); k = int(t.vals[k].next) {
			if !n.items.okT(t, k) {
				return false
			}
		}
	}
	return true
}

// A dispatch is a group of allOf items of the form
//
//	{"if": {"required": [K], "properties": {K: {"const": C}}}, "then": T, "else": E}
//
// all on the same member K (a discriminator, such as a ledger entry's kind
// or an action's type): the tape walk looks K up once for the group instead
// of twice for each item, then checks each item as the item would.
type dispatch struct {
	key      string
	required bool // the if requires K: an object without K fails it
	cases    []dispatchCase
}

// dispatchCase is one item of a dispatch.
type dispatchCase struct {
	c           any   // the constant
	then, elseS *node // nil when absent
}

// okT reports whether value i holds every item of the group.
func (d *dispatch) okT(t *Tape, i int) bool {
	isObject := t.vals[i].kind == TapeObject
	j := -1
	if isObject {
		j = t.Member(i, d.key)
	}
	for _, c := range d.cases {
		// The if holds for a value that is not an object (required and
		// properties say nothing of it), for an object without K unless
		// K is required, and for one whose K is C.
		holds := !isObject || (j < 0 && !d.required) || (j >= 0 && t.equalValue(j, c.c))
		if holds {
			if c.then != nil && !c.then.okT(t, i) {
				return false
			}
		} else if c.elseS != nil && !c.elseS.okT(t, i) {
			return false
		}
	}
	return true
}

// tapeProp is a declared property, for the tape walk: its schema, and its
// bit in requiredBits when it is required.
type tapeProp struct {
	s   *node
	bit uint64
}

// planTape plans the tape walk of n: its declared properties with their
// required bits, and its allOf items grouped (planDispatch).
func (n *node) planTape() {
	if n.props != nil {
		n.tapeProps = make(map[string]tapeProp, len(n.props))
		for name, s := range n.props {
			n.tapeProps[name] = tapeProp{s: s}
		}
		for _, r := range n.required {
			p, ok := n.tapeProps[r]
			switch {
			case ok && p.bit != 0: // named twice
			case ok && bits.OnesCount64(n.requiredBits) < 64:
				p.bit = (n.requiredBits + 1) &^ n.requiredBits // the lowest bit not yet used
				n.requiredBits |= p.bit
				n.tapeProps[r] = p
			default:
				n.requiredOther = append(n.requiredOther, r)
			}
		}
	}
	n.planDispatch()
}

// planDispatch groups the allOf items of n that are discriminator tests
// (see dispatch) by their member, and keeps the others in allOfRest.
func (n *node) planDispatch() {
	n.allOfRest = n.allOf
	if len(n.allOf) < 2 {
		return
	}
	var rest []*node
	byKey := map[string]int{}
	var groups []dispatch
	for _, item := range n.allOf {
		key, required, c, ok := discriminator(item)
		if !ok {
			rest = append(rest, item)
			continue
		}
		g, seen := byKey[key]
		if !seen || groups[g].required != required {
			// One group per member and requiredness, in order of first
			// appearance (the order does not change the verdict).
			g = len(groups)
			byKey[key] = g
			groups = append(groups, dispatch{key: key, required: required})
		}
		groups[g].cases = append(groups[g].cases, dispatchCase{c: c, then: item.thenS, elseS: item.elseS})
	}
	if len(groups) == 0 {
		return
	}
	n.dispatch, n.allOfRest = groups, rest
}

// discriminator reports whether item is exactly an if/then/else whose if
// is {"properties": {K: {"const": C}}}, with or without "required": [K],
// and returns K, whether it is required, and C.
func discriminator(item *node) (key string, required bool, c any, ok bool) {
	if item.ifS == nil || !onlyIfThenElse(item) {
		return "", false, nil, false
	}
	f := item.ifS
	if len(f.propList) != 1 || !bare(f, true) {
		return "", false, nil, false
	}
	key = f.propList[0].name
	switch {
	case len(f.required) == 1 && f.required[0] == key:
		required = true
	case len(f.required) != 0:
		return "", false, nil, false
	}
	p := f.propList[0].s
	for p.ref != nil && bare(p, false) && p.konst == nil { // a $ref and nothing else
		p = p.ref
	}
	if p.konst == nil || !bare(p, false) || p.ref != nil {
		return "", false, nil, false
	}
	return key, required, p.konst[0], true
}

// onlyIfThenElse reports whether n has no keyword but if, then and else.
func onlyIfThenElse(n *node) bool {
	m := *n
	m.ifS, m.thenS, m.elseS = nil, nil, nil
	return bare(&m, false) && m.konst == nil && m.ref == nil && m.props == nil && m.required == nil
}

// bare reports whether n has no keyword beyond const, $ref, and (when
// object is set) properties and required: no type, enum, bounds, nor any
// other applicator.
func bare(n *node, object bool) bool {
	if !object && (n.props != nil || n.required != nil) {
		return false
	}
	return n.boolean == nil && len(n.types) == 0 && n.addl == nil && n.enum == nil &&
		n.minLen < 0 && n.maxLen < 0 && n.pattern == nil && n.format == nil &&
		n.minimum == nil && n.maximum == nil && n.exclMin == nil && n.exclMax == nil &&
		n.items == nil && n.minItems < 0 && n.maxItems < 0 && !n.unique &&
		n.allOf == nil && n.ifS == nil && n.thenS == nil && n.elseS == nil && n.not == nil &&
		(!object || n.konst == nil && n.ref == nil)
}
