//go:build !amd64 || purego

package canonjson

// useBlocks is false: there is no block validator here.
var useBlocks = false

// validUTF8Blocks is never called where useBlocks is false.
func validUTF8Blocks(b []byte) bool { return validUTF8Go(b) }
