//go:build amd64 && !purego

package canonjson

import "golang.org/x/sys/cpu"

// useBlocks says validUTF8Blocks can run here: the processor has AVX2.
var useBlocks = cpu.X86.HasAVX2

// validUTF8Blocks reports whether b, whose length is a multiple of 32, is
// valid UTF-8 but for a last character it may leave unfinished (the caller
// checks that one). It is the lookup algorithm of Keiser and Lemire
// ("Validating UTF-8 in less than one instruction per byte", 2021): every
// byte is classified, with the byte before it, by three table lookups of
// their nibbles that flag every error a pair of bytes can show, and the
// third and fourth bytes of long characters are told from stray
// continuation bytes by the bytes two and three places before.
func validUTF8Blocks(b []byte) bool {
	return validUTF8AVX2(&b[0], len(b))
}

// validUTF8AVX2 is validUTF8Blocks over n bytes from p (utf8_amd64.s).
//
//go:noescape
func validUTF8AVX2(p *byte, n int) bool
