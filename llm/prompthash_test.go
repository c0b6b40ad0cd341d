package llm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/llm"
)

// TestPromptHashVectors pins PromptHash on prompts of every class of
// character: escapes, HTML, U+2028, characters beyond the BMP and invalid
// UTF-8, and on a prompt with an image (hashed by its SHA-256,
// e90137d3...: {"role","content","images":[...]}). The hashes are those of the evidence bundles written so far: a
// change breaks the comparison of model calls across versions.
func TestPromptHashVectors(t *testing.T) {
	tests := []struct {
		msgs []llm.Message
		want string
	}{
		{[]llm.Message{{Role: llm.RoleSystem, Content: "Rules.\n"}, {Role: llm.RoleUser, Content: `Task: {"goal":"<b>&amp;</b>"}`}},
			"d0d08d90cfba907d9d200eeae6408aa3403415ee1dd66d0130816ff9ad5ea3e5"},
		{[]llm.Message{{Role: llm.RoleUser, Content: "tab\tnl\nnul\x00 del\x7f é 日 😀 \u2028\u2029 \ufeff"}},
			"32d5b19445cdab49a6bb881c3c4c6715ea23be4a79b5977f4da8707bf43d17f7"},
		{[]llm.Message{{Role: "odd \xff role", Content: "bad \xc3 utf8 \xed\xa0\x80 \"q\" \\"}},
			"91c04902fbcd54d94f03739a50d866409c08f89eb0462ec99a9a3d5aa322aea8"},
		{[]llm.Message{{Role: llm.RoleSystem, Content: "Rules."}, {Role: llm.RoleUser, Content: "look", Images: []llm.Image{llm.NewImage("artifacts/a1-image.png", "image/png", []byte("not really a png"))}}},
			"2919fd568a774be2d22b347ebf086d4d2eadc1eaac00e3ddd7d157d2661fc337"},
	}
	for _, tt := range tests {
		if got := llm.PromptHash(tt.msgs); got != tt.want {
			t.Errorf("PromptHash(%q) = %s, want %s", tt.msgs, got, tt.want)
		}
	}
}

// BenchmarkPromptHash hashes a Navigator prompt of the catalogue page's
// size (about 200 KB).
func BenchmarkPromptHash(b *testing.B) {
	var obs strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&obs, `{"selector":"[data-testid=\"item-link-%d\"]","role":"link","text":"Item %d","actionHint":"click"},`, i, i)
	}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: strings.Repeat("Rules. ", 300)}, {Role: llm.RoleUser, Content: `Task: {"goal":"work"}`}, {Role: llm.RoleUser, Content: obs.String()}}
	b.ReportAllocs()
	for range b.N {
		llm.PromptHash(msgs)
	}
}
