package nativehost

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// TestClassificationOf: a session started from the popup runs under its
// task's hints.classification, restricted when the hints name none; a bad
// one is refused as bad parameters.
func TestClassificationOf(t *testing.T) {
	for _, tt := range []struct {
		hints    string
		want     contract.Classification
		wantCode Code // 0: no error
	}{
		{``, contract.ClassRestricted, 0},
		{`{"steps":["extract text"]}`, contract.ClassRestricted, 0},
		{`{"classification":"public"}`, contract.ClassPublic, 0},
		{`{"classification":"sensitive"}`, contract.ClassSensitive, 0},
		{`{"classification":"top-secret"}`, "", CodeBadParams},
	} {
		in := contract.Input{Goal: "g", URLs: []string{"https://example.com/"}, Hints: json.RawMessage(tt.hints)}
		got, err := classificationOf(in)
		var e *Error
		switch {
		case tt.wantCode != 0:
			if !errors.As(err, &e) || e.Code != tt.wantCode {
				t.Errorf("hints %s: got %q, %v; want error code %d", tt.hints, got, err, tt.wantCode)
			}
		case err != nil || got != tt.want:
			t.Errorf("hints %s: got %q, %v; want %q", tt.hints, got, err, tt.want)
		}
	}
}
