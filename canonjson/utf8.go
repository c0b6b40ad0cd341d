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
// and a fuzz test cross-check the two, on every path). Where the processor
// has AVX2 (amd64), whole blocks of 32 bytes are checked by
// validUTF8Blocks, in assembly, and the rest from the start of the last
// character the blocks may have left unfinished; elsewhere, and for short
// inputs, by validUTF8Go.
func ValidUTF8(b []byte) bool {
	if len(b) < 64 || !useBlocks {
		return validUTF8Go(b)
	}
	n := len(b) &^ 31
	if !validUTF8Blocks(b[:n]) {
		return false
	}
	// The blocks checked every byte against the bytes before it, but left
	// open whether the last character is complete: check it, and the
	// rest, from its start, the last of the last four bytes that is not a
	// continuation byte (valid blocks never end with four).
	start := n - 4
	for k := n - 1; k >= n-4; k-- {
		if b[k]&0xC0 != 0x80 {
			start = k
			break
		}
	}
	return validUTF8Go(b[start:])
}

// validUTF8Go is ValidUTF8 in Go, for every platform. It reads 32 bytes
// at a time, as
// four words of eight: plain ASCII is skipped, and words whose multi-byte
// characters all start with a lead byte that admits every continuation
// byte (C2-DF, E1-EC, EE-EF: Latin, CJK and most other scripts) are
// checked with a few operations on each word, without a branch
// on the bytes: the continuation bytes must be exactly where the lead
// bytes say. Where ASCII and other text alternate (a CJK page) a branch
// per word or per character would be mispredicted half the time. A block
// with another lead byte (C0, C1, E0, ED, F0-FF: overlong forms,
// surrogates, four-byte characters, bytes never valid) goes through the
// DFA.
func validUTF8Go(b []byte) bool {
	const (
		low4 = 0x0F0F0F0F0F0F0F0F
		mid4 = 0x1E1E1E1E1E1E1E1E // bits 1 to 4: zero in C0 and C1
		dd   = 0x0D0D0D0D0D0D0D0D
	)
	var due uint64 // the bytes of the next word that must be continuation bytes (high bits)
	p := b
	for len(p) >= 32 {
		le := binary.LittleEndian
		if (le.Uint64(p)|le.Uint64(p[8:])|le.Uint64(p[16:])|le.Uint64(p[24:]))&msbs|due == 0 {
			p = p[32:]
			continue
		}
		// Each word's bytes classified by their high bits, one bit per
		// byte (bit 7; x<<k brings bit 7-k of each byte there).
		var bad, special uint64
		d := due
		for k := 0; k < 32; k += 8 {
			x := le.Uint64(p[k:])
			x1, x2 := x<<1, x<<2
			hi := x & msbs
			cont := hi &^ x1    // 10xxxxxx
			lead := hi & x1     // 11xxxxxx
			lead3 := lead & x2  // 111xxxxx
			lead2 := lead &^ x2 // 110xxxxx
			// The lead bytes the marks say too little of: F0-FF; E0 and
			// ED (low nibble 0 or D); C0 and C1 (bits 1 to 4 zero). A
			// zero test ((y-1) &^ y, bit 7) may also mark a byte above
			// one it marks rightly: that only sends the block to the DFA.
			y, z, c := x&low4, x&low4^dd, x&mid4
			special |= lead3&(x<<3|(y-lsbs)&^y|(z-lsbs)&^z) | lead2&((c-lsbs)&^c)
			// The continuation bytes are exactly those the lead bytes
			// (and the word before) call for.
			bad |= cont ^ (d | lead<<8 | lead3<<16)
			d = lead>>56 | lead3>>48
		}
		if special|bad == 0 {
			due = d
			p = p[32:]
			continue
		}
		if special == 0 {
			return false
		}
		// The DFA, over the block and on until it is back in a state that
		// due can say: between characters, or one or two continuation
		// bytes of any value to go.
		state := stateOfDue(due)
		i := 0
		for ; ; i++ {
			if i >= len(p) || state&63 == dfaError {
				return state&63 == dfaAccept
			}
			if i >= 32 && dueOfState(state) != noDue {
				break
			}
			state = utf8Rows[p[i]] >> (state & 63)
		}
		due = dueOfState(state)
		p = p[i:]
	}
	return validUTF8From(stateOfDue(due), p)
}

// noDue is what dueOfState returns for a state due cannot say.
const noDue = ^uint64(0)

// stateOfDue returns the DFA state in which the bytes due are owed.
func stateOfDue(due uint64) uint64 {
	switch due {
	case 0:
		return dfaAccept
	case 0x80:
		return dfaTail1
	}
	return dfaTail2
}

// dueOfState returns the continuation bytes a DFA state owes, as due, or
// noDue when the state restricts them (after E0, ED, F0, F4) or owes
// three.
func dueOfState(state uint64) uint64 {
	switch state & 63 {
	case dfaAccept:
		return 0
	case dfaTail1:
		return 0x80
	case dfaTail2:
		return 0x8080
	}
	return noDue
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
