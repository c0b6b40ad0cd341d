package evidence

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

// validUTF8 reports whether b is valid UTF-8, as utf8.Valid does (tests
// and a fuzz test cross-check the two).
func validUTF8(b []byte) bool {
	state := uint64(dfaAccept)
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
