package actionhash

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
)

// TestActionIsTheRecord: for a valid action of every type, the hashed
// action is the action as its record holds it (its JSON encoding), so that
// a verifier hashes the record's members as they are (FORMAT.md, section 8,
// rule 15).
func TestActionIsTheRecord(t *testing.T) {
	for _, a := range []contract.Action{
		{ID: "a1", Type: contract.ActNavigate, Reason: "open", PolicyTags: []string{"nav"}, URL: "https://example.com/"},
		{ID: "a2", Type: contract.ActClick, Reason: "buy", Selector: "#buy", TimeoutMs: 5000},
		{ID: "a3", Type: contract.ActType, Reason: "fill", PolicyTags: []string{}, Selector: "#q", Text: ""},
		{ID: "a4", Type: contract.ActType, Reason: "pin", Selector: "#pin", Text: "{{redacted}}", Redact: true},
		{ID: "a5", Type: contract.ActSelect, Reason: "pick", Selector: "#size", Value: "L"},
		{ID: "a6", Type: contract.ActScroll, Reason: "more", Direction: contract.ScrollDirection("down"), AmountPx: 300},
		{ID: "a7", Type: contract.ActWait, Reason: "load", DurationMs: 500},
		{ID: "a8", Type: contract.ActExtract, Reason: "price", Extract: contract.ExtractKind("text"), Selector: ".price"},
		{ID: "a9", Type: contract.ActExtract, Reason: "look", Extract: contract.ExtractScreenshot, Vision: true},
	} {
		t.Run(string(a.Type), func(t *testing.T) {
			rec, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			want, err := canonjson.Transform(rec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := canonjson.EncodeValue(Action(a))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("got %s, want the record %s", got, want)
			}
		})
	}
}

// TestSum: the hash is the SHA-256 of the canonical document, target null
// without one, effect only with one; the element carries its empty
// page-controlled fields.
func TestSum(t *testing.T) {
	click := contract.Action{ID: "a3", Type: contract.ActClick, Reason: "buy", PolicyTags: []string{"purchase"}, Selector: "#buy"}
	for _, tt := range []struct {
		name   string
		target *contract.Element
		effect *contract.Effect
		doc    string
	}{
		{"no target", nil, nil, `{"action":{"id":"a3","policyTags":["purchase"],"reason":"buy","selector":"#buy","type":"click"},"activeUrl":"https://example.com/pricing","sessionId":"cus_01HZX4K9","target":null}`},
		{"a target", &contract.Element{Tag: "button", Label: "Buy"}, nil, `{"action":{"id":"a3","policyTags":["purchase"],"reason":"buy","selector":"#buy","type":"click"},"activeUrl":"https://example.com/pricing","sessionId":"cus_01HZX4K9","target":{"autocomplete":"","id":"","label":"Buy","name":"","role":"","tag":"button","text":"","type":""}}`},
		{"an effect", nil, &contract.Effect{Kind: "request", Method: "POST", Origin: "https://shop.example", Path: "/pay"}, `{"action":{"id":"a3","policyTags":["purchase"],"reason":"buy","selector":"#buy","type":"click"},"activeUrl":"https://example.com/pricing","effect":{"kind":"request","method":"POST","origin":"https://shop.example","path":"/pay"},"sessionId":"cus_01HZX4K9","target":null}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sum := sha256.Sum256([]byte(tt.doc))
			if got, want := Of("cus_01HZX4K9", "https://example.com/pricing", click, tt.target, tt.effect), hex.EncodeToString(sum[:]); got != want {
				t.Errorf("got %s, want %s (the SHA-256 of %s)", got, want, tt.doc)
			}
		})
	}
}
