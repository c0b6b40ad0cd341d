package contract_test

import (
	"encoding/json"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// TestIsID: IsID answers as the schema's id definition
// (browser-state.schema.json#/$defs/id) does, on every case.
func TestIsID(t *testing.T) {
	raw, err := fs.ReadFile(schemas.FS(), "browser-state.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs struct {
			ID struct {
				MinLength, MaxLength int
				Pattern              string
			} `json:"id"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	def := doc.Defs.ID
	re := regexp.MustCompile(def.Pattern)
	bySchema := func(s string) bool {
		n := utf8.RuneCountInString(s)
		return n >= def.MinLength && n <= def.MaxLength && re.MatchString(s)
	}
	for _, s := range []string{"", "a", "a1", "s-4a7e92ca1dc8f6c9", "cus_01HZX4K9", "a.b_c-d", "-a", ".a", "_a", "a b", "a/b", "é", "aé", strings.Repeat("a", 128), strings.Repeat("a", 129), "a\n"} {
		if got, want := contract.IsID(s), bySchema(s); got != want {
			t.Errorf("IsID(%q) = %v, want %v (the schema's answer)", s, got, want)
		}
	}
}
