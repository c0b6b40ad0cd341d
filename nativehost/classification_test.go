package nativehost

import (
	"encoding/json"
	"errors"
	"strings"
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

// TestHostBudget: a session started from the browser gets a model budget
// from its task's hints: hints.maxTokens bound its tokens, none still
// counts them; a cost budget is refused as bad parameters (the host has
// no registry to price the model), as is a bad hint.
func TestHostBudget(t *testing.T) {
	for _, tt := range []struct {
		hints     string
		maxTokens int
		wantCode  Code // 0: no error
		says      string
	}{
		{``, 0, 0, ""},
		{`{"steps":["extract text"]}`, 0, 0, ""},
		{`{"maxTokens":5000}`, 5000, 0, ""},
		{`{"maxTokens":-1}`, 0, CodeBadParams, "maxTokens"},
		{`{"maxCostUsd":0.5}`, 0, CodeBadParams, "no model registry to price the model"},
	} {
		in := contract.Input{Goal: "g", URLs: []string{"https://example.com/"}, Hints: json.RawMessage(tt.hints)}
		b, err := hostBudget(in)
		var e *Error
		switch {
		case tt.wantCode != 0:
			if !errors.As(err, &e) || e.Code != tt.wantCode || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("hints %s: got %v; want error code %d saying %q", tt.hints, err, tt.wantCode, tt.says)
			}
		case err != nil || b == nil || b.Limits().MaxTokens != tt.maxTokens:
			t.Errorf("hints %s: budget %+v, %v; want one with token limit %d", tt.hints, b.Limits(), err, tt.maxTokens)
		}
	}
}
