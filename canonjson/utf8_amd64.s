//go:build amd64 && !purego

#include "textflag.h"

// The error flags of the lookup tables, one bit each: a pair of bytes (the
// byte before, the byte) shows an error when the three lookups share a
// bit. TWO_CONTS (two continuation bytes) is an error only where the byte
// is not the third or fourth of a character.
//
//	TOO_SHORT      0x01  a lead byte not followed by a continuation byte
//	TOO_LONG       0x02  a continuation byte after ASCII
//	OVERLONG_3     0x04  E0 80..9F
//	TOO_LARGE      0x08  F4 90..BF, F5..FF
//	SURROGATE      0x10  ED A0..BF
//	OVERLONG_2     0x20  C0, C1
//	TOO_LARGE_1000 0x40  F5..FF 80..8F
//	OVERLONG_4     0x40  F0 80..8F
//	TWO_CONTS      0x80
//
// byte1High: by the high nibble of the byte before.
DATA byte1High<>+0x00(SB)/8, $0x0202020202020202 // 0-7: TOO_LONG
DATA byte1High<>+0x08(SB)/8, $0x4915012180808080 // 8-B: TWO_CONTS; C: TOO_SHORT|OVERLONG_2; D: TOO_SHORT; E: TOO_SHORT|OVERLONG_3|SURROGATE; F: TOO_SHORT|TOO_LARGE|TOO_LARGE_1000|OVERLONG_4
DATA byte1High<>+0x10(SB)/8, $0x0202020202020202
DATA byte1High<>+0x18(SB)/8, $0x4915012180808080
GLOBL byte1High<>(SB), RODATA|NOPTR, $32

// byte1Low: by the low nibble of the byte before (CARRY = TOO_SHORT |
// TOO_LONG | TWO_CONTS = 0x83).
DATA byte1Low<>+0x00(SB)/8, $0xCBCBCB8B8383A3E7 // 0: CARRY|OVERLONG_3|OVERLONG_2|OVERLONG_4; 1: CARRY|OVERLONG_2; 2, 3: CARRY; 4: CARRY|TOO_LARGE; 5-7: CARRY|TOO_LARGE|TOO_LARGE_1000
DATA byte1Low<>+0x08(SB)/8, $0xCBCBDBCBCBCBCBCB // 8-C, E, F: CARRY|TOO_LARGE|TOO_LARGE_1000; D: that|SURROGATE
DATA byte1Low<>+0x10(SB)/8, $0xCBCBCB8B8383A3E7
DATA byte1Low<>+0x18(SB)/8, $0xCBCBDBCBCBCBCBCB
GLOBL byte1Low<>(SB), RODATA|NOPTR, $32

// byte2High: by the high nibble of the byte.
DATA byte2High<>+0x00(SB)/8, $0x0101010101010101 // 0-7: TOO_SHORT
DATA byte2High<>+0x08(SB)/8, $0x01010101BABAAEE6 // 8: TOO_LONG|OVERLONG_2|TWO_CONTS|OVERLONG_3|TOO_LARGE_1000|OVERLONG_4; 9: TOO_LONG|OVERLONG_2|TWO_CONTS|OVERLONG_3|TOO_LARGE; A, B: TOO_LONG|OVERLONG_2|TWO_CONTS|SURROGATE|TOO_LARGE; C-F: TOO_SHORT
DATA byte2High<>+0x10(SB)/8, $0x0101010101010101
DATA byte2High<>+0x18(SB)/8, $0x01010101BABAAEE6
GLOBL byte2High<>(SB), RODATA|NOPTR, $32

// Saturating subtraction of these leaves the top bit of a byte set when it
// is at least E0, F0: the byte two (three) places before is then the lead
// of a character of three (four) bytes.
DATA sub60<>+0x00(SB)/8, $0x6060606060606060
DATA sub60<>+0x08(SB)/8, $0x6060606060606060
DATA sub60<>+0x10(SB)/8, $0x6060606060606060
DATA sub60<>+0x18(SB)/8, $0x6060606060606060
GLOBL sub60<>(SB), RODATA|NOPTR, $32

DATA sub70<>+0x00(SB)/8, $0x7070707070707070
DATA sub70<>+0x08(SB)/8, $0x7070707070707070
DATA sub70<>+0x10(SB)/8, $0x7070707070707070
DATA sub70<>+0x18(SB)/8, $0x7070707070707070
GLOBL sub70<>(SB), RODATA|NOPTR, $32

DATA top80<>+0x00(SB)/8, $0x8080808080808080
DATA top80<>+0x08(SB)/8, $0x8080808080808080
DATA top80<>+0x10(SB)/8, $0x8080808080808080
DATA top80<>+0x18(SB)/8, $0x8080808080808080
GLOBL top80<>(SB), RODATA|NOPTR, $32

DATA nibble<>+0x00(SB)/8, $0x0F0F0F0F0F0F0F0F
DATA nibble<>+0x08(SB)/8, $0x0F0F0F0F0F0F0F0F
DATA nibble<>+0x10(SB)/8, $0x0F0F0F0F0F0F0F0F
DATA nibble<>+0x18(SB)/8, $0x0F0F0F0F0F0F0F0F
GLOBL nibble<>(SB), RODATA|NOPTR, $32

// Saturating subtraction of this from a block is not zero when one of its
// last three bytes starts a character the block does not finish: a lead
// of four bytes in byte 29 (>= F0), of three in 30 (>= E0), of two in 31
// (>= C0).
DATA unfinished<>+0x00(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA unfinished<>+0x08(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA unfinished<>+0x10(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA unfinished<>+0x18(SB)/8, $0xBFDFEFFFFFFFFFFF
GLOBL unfinished<>(SB), RODATA|NOPTR, $32

// func validUTF8AVX2(p *byte, n int) bool
//
// n is a multiple of 32. Registers: Y0 the block before, Y1 the block, Y2
// the errors so far, Y3 the unfinished characters of the block before.
TEXT ·validUTF8AVX2(SB), NOSPLIT, $0-17
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VMOVDQU top80<>(SB), Y7
	VMOVDQU sub60<>(SB), Y8
	VMOVDQU sub70<>(SB), Y9
	VMOVDQU byte1High<>(SB), Y10
	VMOVDQU byte1Low<>(SB), Y11
	VMOVDQU byte2High<>(SB), Y12
	VMOVDQU nibble<>(SB), Y13
	VMOVDQU unfinished<>(SB), Y14

loop:
	CMPQ CX, $32
	JB   done
	VMOVDQU (SI), Y1
	VPMOVMSKB Y1, AX
	TESTL AX, AX
	JNZ  multibyte

	// ASCII: an error if the block before left a character unfinished.
	VPOR Y3, Y2, Y2
	VPXOR Y3, Y3, Y3
	VMOVDQU Y1, Y0
	ADDQ $32, SI
	SUBQ $32, CX
	JMP  loop

multibyte:
	// The bytes one, two and three places before each byte.
	VPERM2I128 $0x21, Y1, Y0, Y4 // the upper half of the block before, the lower half of the block
	VPALIGNR $15, Y4, Y1, Y5
	VPALIGNR $14, Y4, Y1, Y6
	VPALIGNR $13, Y4, Y1, Y4

	// Y6: top bit set where the byte must be a continuation byte, the
	// third or fourth of a character.
	VPSUBUSB Y8, Y6, Y6
	VPSUBUSB Y9, Y4, Y4
	VPOR Y4, Y6, Y6
	VPAND Y7, Y6, Y6

	// Y4: the flags the three lookups share.
	VPSRLW $4, Y5, Y4
	VPAND Y13, Y4, Y4
	VPSHUFB Y4, Y10, Y4
	VPAND Y13, Y5, Y5
	VPSHUFB Y5, Y11, Y5
	VPAND Y5, Y4, Y4
	VPSRLW $4, Y1, Y5
	VPAND Y13, Y5, Y5
	VPSHUFB Y5, Y12, Y5
	VPAND Y5, Y4, Y4

	// Two continuation bytes are an error exactly where the second is
	// not a third or fourth byte; so is any other flag.
	VPXOR Y6, Y4, Y4
	VPOR Y4, Y2, Y2

	VPSUBUSB Y14, Y1, Y3
	VMOVDQU Y1, Y0
	ADDQ $32, SI
	SUBQ $32, CX
	JMP  loop

done:
	VPTEST Y2, Y2
	SETEQ ret+16(FP)
	VZEROUPPER
	RET
