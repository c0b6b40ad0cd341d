package nativehost

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// TestCheckClassification: a session started from the popup runs under
// its task's hints.classification, which the session resolves (restricted
// when the hints name none: session's TestClassificationAndVisionProbe);
// the host refuses a bad one as bad parameters.
func TestCheckClassification(t *testing.T) {
	for _, tt := range []struct {
		hints    string
		wantCode Code // 0: no error
	}{
		{``, 0},
		{`{"steps":["extract text"]}`, 0},
		{`{"classification":"public"}`, 0},
		{`{"classification":"sensitive"}`, 0},
		{`{"classification":"top-secret"}`, CodeBadParams},
	} {
		in := contract.Input{Goal: "g", URLs: []string{"https://example.com/"}, Hints: json.RawMessage(tt.hints)}
		err := checkClassification(in)
		var e *Error
		switch {
		case tt.wantCode != 0:
			if !errors.As(err, &e) || e.Code != tt.wantCode {
				t.Errorf("hints %s: got %v; want error code %d", tt.hints, err, tt.wantCode)
			}
		case err != nil:
			t.Errorf("hints %s: got %v; want none", tt.hints, err)
		}
	}
}
