package llm_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/llm"
)

// TestPromptHashAsCanonjson holds PromptHash, which writes the canonical
// form itself, to the hash of canonjson.Marshal's form, on prompts of
// every class of character: escapes, HTML, U+2028, characters beyond the
// BMP and invalid UTF-8.
func TestPromptHashAsCanonjson(t *testing.T) {
	alphabet := []string{"a", " ", `"`, `\`, "\n", "\t", "\x00", "\x1f", "\x7f", "<", ">", "&", "é", "日", "😀", "\u2028", "\u2029", "\ufeff", "\xff", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80"}
	r := rand.New(rand.NewPCG(41, 42))
	str := func() string {
		var b strings.Builder
		for range r.IntN(60) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	tests := [][]llm.Message{
		nil,
		{},
		{{Role: llm.RoleUser, Content: "hi"}},
		{{Role: llm.RoleSystem, Content: ""}, {Role: "odd \xff role", Content: "<b>\u2028</b>"}},
	}
	for range 2000 {
		msgs := make([]llm.Message, r.IntN(4))
		for i := range msgs {
			msgs[i] = llm.Message{Role: llm.Role(str()), Content: str()}
		}
		tests = append(tests, msgs)
	}
	for i, msgs := range tests {
		if got, want := llm.PromptHash(msgs), llm.PromptHashGeneral(msgs); got != want {
			t.Fatalf("case %d %q: PromptHash %s, by canonjson.Marshal %s", i, msgs, got, want)
		}
	}
}

// FuzzPromptHash holds PromptHash to canonjson.Marshal's form on any text.
func FuzzPromptHash(f *testing.F) {
	f.Add("user", "hi", "assistant", "")
	f.Add("user", "<&>\u2028\xff\x00\"\\", "\xc3", "😀")
	f.Fuzz(func(t *testing.T, r1, c1, r2, c2 string) {
		msgs := []llm.Message{{Role: llm.Role(r1), Content: c1}, {Role: llm.Role(r2), Content: c2}}
		if got, want := llm.PromptHash(msgs), llm.PromptHashGeneral(msgs); got != want {
			t.Fatalf("PromptHash(%q) = %s, by canonjson.Marshal %s", msgs, got, want)
		}
	})
}

// BenchmarkPromptHash hashes a Navigator prompt of the catalogue page's
// size (about 200 KB).
func BenchmarkPromptHash(b *testing.B) {
	var obs strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&obs, `{"selector":"[data-testid=\"item-link-%d\"]","role":"link","text":"Item %d","actionHint":"click"},`, i, i)
	}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: strings.Repeat("Rules. ", 300)}, {Role: llm.RoleUser, Content: `Task: {"goal":"work"}`}, {Role: llm.RoleUser, Content: obs.String()}}
	for _, bc := range []struct {
		name string
		hash func([]llm.Message) string
	}{{"direct", llm.PromptHash}, {"canonjson", llm.PromptHashGeneral}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				bc.hash(msgs)
			}
		})
	}
}
