package schemas

import (
	"encoding/json"
	"errors"
	"runtime/debug"
	"strings"
	"testing"
)

// validateNoPanic calls Validate and turns a panic into a test failure, so
// that one crashing input fails its own subtest instead of aborting every
// test of the package.
func validateNoPanic(t *testing.T, kind Kind, doc []byte) error {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: Validate panicked on %q: %v\n%s", kind, truncate(doc, 200), r, debug.Stack())
		}
	}()
	return Validate(kind, doc)
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// FuzzValidate feeds arbitrary bytes to Validate for every kind: the first
// byte picks the kind (modulo the number of kinds, in Kinds order), the rest
// is the document. Validate must never panic, and must fail only with a
// *SyntaxError, a *ValidationError or ErrTooLarge, each well-formed. The
// committed corpus is testdata/fuzz/FuzzValidate; `make fuzz` explores
// further.
func FuzzValidate(f *testing.F) {
	if err := Check(); err != nil {
		f.Fatal(err)
	}
	kinds := Kinds()
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, doc := kinds[0], data
		if len(data) > 0 {
			kind, doc = kinds[int(data[0])%len(kinds)], data[1:]
		}
		err := validateNoPanic(t, kind, doc)
		var se *SyntaxError
		var ve *ValidationError
		switch {
		case err == nil:
			// The strict parser accepts only well-formed JSON.
			if !json.Valid(doc) {
				t.Fatalf("%s: accepted malformed JSON %q", kind, doc)
			}
		case errors.As(err, &se):
			if se != err {
				t.Fatalf("%s: wrapped syntax error %v", kind, err)
			}
			if se.Offset < 0 || se.Offset > int64(len(doc)) {
				t.Fatalf("%s: syntax error offset %d outside the %d-byte document", kind, se.Offset, len(doc))
			}
		case errors.As(err, &ve):
			if ve != err {
				t.Fatalf("%s: wrapped validation error %v", kind, err)
			}
			if !json.Valid(doc) {
				t.Fatalf("%s: malformed JSON %q reported as invalid rather than malformed", kind, doc)
			}
			if ve.Kind != kind || len(ve.Problems) == 0 {
				t.Fatalf("%s: validation error of kind %s with %d problems", kind, ve.Kind, len(ve.Problems))
			}
			for _, p := range ve.Problems {
				if p.Pointer != "" && !strings.HasPrefix(p.Pointer, "/") {
					t.Fatalf("%s: problem pointer %q is not a JSON pointer", kind, p.Pointer)
				}
			}
		case err == ErrTooLarge:
			if len(doc) <= MaxDocumentBytes {
				t.Fatalf("%s: ErrTooLarge for %d bytes", kind, len(doc))
			}
		default:
			t.Fatalf("%s: unexpected error %T: %v", kind, err, err)
		}
	})
}
