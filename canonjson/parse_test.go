package canonjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/schemas"
)

func TestParseCanonical(t *testing.T) {
	tests := []struct {
		doc     string
		wantErr string // "" = canonical
	}{
		{`{}`, ""},
		{`[]`, ""},
		{`{"a":1,"b":[true,false,null],"c":"x"}`, ""},
		{`{"b":1,"a":2}`, "not sorted"},
		{`{"a":1,"a":2}`, "duplicate object key"},
		{`{"a": 1}`, "unexpected byte"},
		{`{"a":1} `, "data after"},
		{"{\"a\":\"\\u000b\"}", ""},
		{"{\"a\":\"\\u000B\"}", "non-canonical"},
		{`{"a":"\u0041"}`, "non-canonical"},
		{`{"a":"\/"}`, "non-canonical escape"},
		{`{"a":"\n"}`, ""},
		{`{"a":"\u000a"}`, "non-canonical"},
		{"{\"a\":\"\x01\"}", "control character"},
		{"{\"a\":\"\xff\"}", "invalid UTF-8"},
		{`{"a":"é€😀"}`, ""},
		{`1.0`, "not in canonical form"},
		{`1e2`, "not in canonical form"},
		{`100`, ""},
		{`-0`, "not in canonical form"},
		{`0.1`, ""},
		{`1e+21`, ""},
		{`1e21`, "not in canonical form"},
		{`01`, "invalid number"},
		{`1.`, "invalid number"},
		{`-`, "invalid number"},
		{`9007199254740993`, "not in canonical form"},
		{`tru`, "invalid literal"},
		{`"abc`, "unterminated string"},
		{`{"a":1,}`, "want an object key"},
		{`[1,]`, "unexpected byte"},
		{`{"\ud800":1}`, "non-canonical"},
		// UTF-16 order: U+1F600 (a surrogate pair, D83D...) sorts before U+FB01.
		{`{"😀":1,"ﬁ":2}`, ""},
		{`{"ﬁ":1,"😀":2}`, "not sorted"},
		// Keys with escapes are ordered decoded: U+0001 before U+000A.
		{`{"a\u0001":1,"a\n":2}`, ""},
		{`{"a\n":1,"a\u0001":2}`, "not sorted"},
		{`{"a\n":1,"a\n":2}`, "duplicate object key"},
		{`{"a":1,"a\n":2}`, ""},
		{`{"a\"":1,"a\\":2}`, ""},
		{`{"a\\":1,"a\"":2}`, "not sorted"},
		{`{"ab":1,"a":2}`, "not sorted"},
		{`{"é":1,"e":2}`, "not sorted"},
		{`{"e":1,"é":2}`, ""},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), "nesting deeper"},
		{strings.Repeat("[", 64) + strings.Repeat("]", 64), ""},
	}
	for _, tt := range tests {
		checkCanonAgreement(t, []byte(tt.doc))
		_, err := ParseCanonical([]byte(tt.doc))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v, want canonical", tt.doc, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: %v, want an error containing %q", tt.doc, err, tt.wantErr)
		}
		// Whatever ParseCanonical accepts, Transform leaves unchanged.
		if err == nil {
			if c, cerr := Transform([]byte(tt.doc)); cerr != nil || !bytes.Equal(c, []byte(tt.doc)) {
				t.Errorf("%s: accepted, but its canonical form is %s (%v)", tt.doc, c, cerr)
			}
		}
	}
}

// checkCanonAgreement: ParseCanonical accepts doc exactly when it is its
// own canonical form, and then parses it as schemas.Parse does.
func checkCanonAgreement(t testing.TB, doc []byte) {
	v, err := ParseCanonical(doc)
	c, cerr := Transform(doc)
	isCanon := cerr == nil && bytes.Equal(c, doc)
	if (err == nil) != isCanon {
		t.Fatalf("%q: ParseCanonical error %v, but Transform gives %q (%v)", doc, err, c, cerr)
	}
	// Check, which builds nothing, gives the same verdict and the same
	// first deviation.
	if cerr := Check(doc, schemas.MaxDepth); fmt.Sprint(cerr) != fmt.Sprint(err) {
		t.Fatalf("%q: Check says %v, ParseCanonical %v", doc, cerr, err)
	}
	if err == nil {
		want, _ := schemas.Parse(doc)
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("%q: parsed %#v, schemas.Parse %#v", doc, v, want)
		}
	}
	if cerr == nil {
		if _, err := ParseCanonical(c); err != nil {
			t.Fatalf("%q: its canonical form %q is refused: %v", doc, c, err)
		}
	}
}

func FuzzParseCanonical(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,-3e-7,"x\n\u0001"],"b":{"c":null}}`, `"😀ﬁ"`, `1e+21`, `[true,false]`} {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("../schemas/testdata/*.json")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		var vf struct {
			Valid []struct{ Doc json.RawMessage }
		}
		json.Unmarshal(b, &vf)
		for _, v := range vf.Valid {
			if c, err := Transform(v.Doc); err == nil {
				f.Add(c)
			}
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkCanonAgreement(t, doc)
	})
}
