package suite

import (
	"errors"
	"reflect"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// FuzzParseIndex feeds arbitrary bytes to ParseIndex, the reader of an
// index from outside (aegis verify SUITE.json): it never panics, refuses
// with an error wrapping ErrInvalidIndex, and what it accepts names only
// bundles inside the index's directory, each once, and encodes back to an
// index that reads the same. The committed corpus is
// testdata/fuzz/FuzzParseIndex; make fuzz explores further.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"formatVersion":"aegis-suite/1","startedAt":"2026-11-26T21:00:00Z","endedAt":"2026-11-26T21:00:01Z","durationMs":1000,"parallel":1,"tasks":[{"name":"a","durationMs":0,"actions":0,"denials":0,"approvals":0,"error":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := ParseIndex(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidIndex) {
				t.Fatalf("error not wrapping ErrInvalidIndex: %v", err)
			}
			return
		}
		for _, r := range idx.Tasks {
			for _, b := range bundlesOf(r) {
				if !localBundle(b) {
					t.Fatalf("accepted bundle %q outside the directory", b)
				}
			}
		}
		if err := checkIndex(idx); err != nil {
			t.Fatalf("accepted an index checkIndex refuses: %v", err)
		}
		b, err := contract.Encode(schemas.KindSuiteIndex, idx)
		if err != nil {
			t.Fatalf("accepted index does not encode: %v", err)
		}
		again, err := ParseIndex(b)
		if err != nil {
			t.Fatalf("re-encoded index refused: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(again, idx) {
			t.Fatalf("round trip changed the index:\n%+v\n%+v", idx, again)
		}
	})
}
