package canonjson

import "encoding/binary"

// A shift-based DFA for UTF-8 validation (RFC 3629). Each state is a shift
// amount; utf8Rows[b] holds, at bit s, the 6-bit next state from state s on
// byte b. One table load (independent of the state) and one shift per byte
// keep the dependency chain short and the loop free of branches on the
// bytes, which matters for text where ASCII and multi-byte characters
// alternate (CJK pages): there the standard library's branchy per-rune
// loop mispredicts at every change.
const (
	dfaError  = 0 // absorbing: every row holds 0 at bit 0
	dfaAccept = 6
	dfaTail1  = 12 // one continuation byte to go
	dfaTail2  = 18
	dfaTail3  = 24
	dfaE0     = 30 // after E0: A0..BF (no overlong)
	dfaED     = 36 // after ED: 80..9F (no surrogates)
	dfaF0     = 42 // after F0: 90..BF (no overlong)
	dfaF4     = 48 // after F4: 80..8F (nothing above U+10FFFF)
)

var utf8Rows = func() (rows [256]uint64) {
	set := func(lo, hi int, from, to uint64) {
		for b := lo; b <= hi; b++ {
			rows[b] |= to << from
		}
	}
	set(0x00, 0x7F, dfaAccept, dfaAccept)
	set(0xC2, 0xDF, dfaAccept, dfaTail1)
	set(0xE0, 0xE0, dfaAccept, dfaE0)
	set(0xE1, 0xEC, dfaAccept, dfaTail2)
	set(0xED, 0xED, dfaAccept, dfaED)
	set(0xEE, 0xEF, dfaAccept, dfaTail2)
	set(0xF0, 0xF0, dfaAccept, dfaF0)
	set(0xF1, 0xF3, dfaAccept, dfaTail3)
	set(0xF4, 0xF4, dfaAccept, dfaF4)
	set(0x80, 0xBF, dfaTail1, dfaAccept)
	set(0x80, 0xBF, dfaTail2, dfaTail1)
	set(0x80, 0xBF, dfaTail3, dfaTail2)
	set(0xA0, 0xBF, dfaE0, dfaTail1)
	set(0x80, 0x9F, dfaED, dfaTail1)
	set(0x90, 0xBF, dfaF0, dfaTail2)
	set(0x80, 0x8F, dfaF4, dfaTail2)
	return rows
}()

// ValidUTF8 reports whether b is valid UTF-8, as utf8.Valid does (tests
// and a fuzz test cross-check the two). A large input is cut in four at
// character starts and the four parts run through the DFA together: each
// step of one DFA waits for the step before it, four independent ones keep
// the processor busy. (b is valid exactly when both parts are, if the cut
// is at the end or before a byte that is not a continuation byte.)
func ValidUTF8(b []byte) bool {
	if len(b) < 1024 {
		return validUTF8From(dfaAccept, b)
	}
	q := len(b) / 4
	k1 := charStart(b, q)
	k2 := charStart(b, max(2*q, k1))
	k3 := charStart(b, max(3*q, k2))
	return validUTF8x4(b[:k1], b[k1:k2], b[k2:k3], b[k3:])
}

// charStart returns the first index from i that is the end of b or holds
// a byte other than a continuation byte.
func charStart(b []byte, i int) int {
	for i < len(b) && b[i]&0xC0 == 0x80 {
		i++
	}
	return i
}

// validUTF8From runs the DFA over b from state and reports whether it
// ends in the accepting state.
func validUTF8From(state uint64, b []byte) bool {
	i, n := 0, len(b)
	for i < n {
		// Plain ASCII eight bytes at a time, between characters.
		if state&63 == dfaAccept {
			for i+8 <= n && binary.LittleEndian.Uint64(b[i:])&msbs == 0 {
				i += 8
			}
		}
		// Then 16 bytes through the DFA, or what is left.
		end := min(i+16, n)
		for ; i < end; i++ {
			state = utf8Rows[b[i]] >> (state & 63)
		}
		if state&63 == dfaError {
			return false
		}
	}
	return state&63 == dfaAccept
}

// validUTF8x4 reports whether all four parts are valid UTF-8, running
// their DFAs side by side, 16 bytes of each at a time (skipped when all
// four are between characters and the 64 bytes plain ASCII).
func validUTF8x4(a, b, c, d []byte) bool {
	n := min(len(a), len(b), len(c), len(d))
	a, b, c, d = a[:len(a):len(a)], b[:len(b):len(b)], c[:len(c):len(c)], d[:len(d):len(d)]
	sa, sb, sc, sd := uint64(dfaAccept), uint64(dfaAccept), uint64(dfaAccept), uint64(dfaAccept)
	i := 0
	for ; i+16 <= n; i += 16 {
		if sa&63 == dfaAccept && sb&63 == dfaAccept && sc&63 == dfaAccept && sd&63 == dfaAccept {
			le := binary.LittleEndian
			x := le.Uint64(a[i:]) | le.Uint64(a[i+8:]) | le.Uint64(b[i:]) | le.Uint64(b[i+8:]) |
				le.Uint64(c[i:]) | le.Uint64(c[i+8:]) | le.Uint64(d[i:]) | le.Uint64(d[i+8:])
			if x&msbs == 0 {
				continue
			}
		}
		ba, bb, bc, bd := a[i:i+16], b[i:i+16], c[i:i+16], d[i:i+16]
		for j := range 16 {
			sa = utf8Rows[ba[j]] >> (sa & 63)
			sb = utf8Rows[bb[j]] >> (sb & 63)
			sc = utf8Rows[bc[j]] >> (sc & 63)
			sd = utf8Rows[bd[j]] >> (sd & 63)
		}
		if (sa&63)*(sb&63)*(sc&63)*(sd&63) == 0 { // one is in the error state
			return false
		}
	}
	return validUTF8From(sa, a[i:]) && validUTF8From(sb, b[i:]) && validUTF8From(sc, c[i:]) && validUTF8From(sd, d[i:])
}

// utf8Seq returns the length of the valid multi-byte UTF-8 sequence that
// starts at b[i] (a byte >= 0x80), or 0 if there is none: no overlong
// form, no surrogate, nothing above U+10FFFF (RFC 3629).
func utf8Seq(b []byte, i int) int {
	c := b[i]
	switch {
	case c < 0xC2:
		return 0
	case c < 0xE0:
		if i+1 < len(b) && b[i+1]&0xC0 == 0x80 {
			return 2
		}
	case c < 0xF0:
		if i+2 < len(b) && b[i+2]&0xC0 == 0x80 {
			lo, hi := byte(0x80), byte(0xBF)
			if c == 0xE0 {
				lo = 0xA0
			} else if c == 0xED {
				hi = 0x9F
			}
			if x := b[i+1]; lo <= x && x <= hi {
				return 3
			}
		}
	case c < 0xF5:
		if i+3 < len(b) && b[i+2]&0xC0 == 0x80 && b[i+3]&0xC0 == 0x80 {
			lo, hi := byte(0x80), byte(0xBF)
			if c == 0xF0 {
				lo = 0x90
			} else if c == 0xF4 {
				hi = 0x8F
			}
			if x := b[i+1]; lo <= x && x <= hi {
				return 4
			}
		}
	}
	return 0
}
