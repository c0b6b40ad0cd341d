package nativehost

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkConnPing measures one ping round trip between two Conns over
// in-memory pipes: the host's own share of a native messaging round trip
// (framing, strict decoding, encoding), without Chrome.
//
//	go test ./nativehost/ -run '^$' -bench ConnPing
func BenchmarkConnPing(b *testing.B) {
	for _, size := range []int{100, 500 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			p := pairCap(b, echo{}, DefaultMaxInbound)
			params := PingParams{Data: strings.Repeat("x", size)}
			b.SetBytes(int64(2 * size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := p.a.Call(context.Background(), MethodPing, params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
