package nativehost

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// startParams are the parameters of a popup's session on example.com,
// changed by mutate.
func startParams(mutate func(*StartParams)) StartParams {
	p := StartParams{TabID: 1, Goal: "g", Origins: []string{"https://example.com"}}
	mutate(&p)
	return p
}

// TestCheckClassification: a session started from the popup runs under
// its StartParams.Classification, which taskOf puts in the task's
// hints.classification and the session resolves (restricted when it names
// none: session's TestClassificationAndVisionProbe); the host refuses a
// bad one as bad parameters.
func TestCheckClassification(t *testing.T) {
	for _, tt := range []struct {
		classification string
		steps          []string
		wantCode       Code // 0: no error
	}{
		{"", nil, 0},
		{"", []string{"extract text"}, 0},
		{"public", nil, 0},
		{"sensitive", []string{"extract text"}, 0},
		{"top-secret", nil, CodeBadParams},
	} {
		in, err := taskOf(startParams(func(p *StartParams) { p.Classification, p.Steps = tt.classification, tt.steps }))
		if err != nil {
			t.Fatalf("classification %q: %v", tt.classification, err)
		}
		err = checkClassification(in)
		var e *Error
		switch {
		case tt.wantCode != 0:
			if !errors.As(err, &e) || e.Code != tt.wantCode {
				t.Errorf("classification %q: got %v; want error code %d", tt.classification, err, tt.wantCode)
			}
		case err != nil:
			t.Errorf("classification %q: got %v; want none", tt.classification, err)
		default:
			c, _ := in.Classification()
			if got, want := string(c), tt.classification; got != want {
				t.Errorf("hints %s: classification %q, want %q", in.Hints, got, want)
			}
		}
	}
}

// TestHostBudget: a session started from the browser gets a model budget
// from its StartParams.MaxTokens (the task's hints.maxTokens): it bounds
// its tokens, none still counts them; a bad one is refused as bad
// parameters. A cost budget cannot be asked for: StartParams has no member
// for one (the host has no registry to price the model).
func TestHostBudget(t *testing.T) {
	for _, tt := range []struct {
		maxTokens int
		steps     []string
		want      int
		wantCode  Code // 0: no error
		says      string
	}{
		{0, nil, 0, 0, ""},
		{0, []string{"extract text"}, 0, 0, ""},
		{5000, nil, 5000, 0, ""},
		{5000, []string{"extract text"}, 5000, 0, ""},
		{-1, nil, 0, CodeBadParams, "maxTokens"},
		{contract.MaxTaskTokens + 1, nil, 0, CodeBadParams, "maxTokens"},
	} {
		in, err := taskOf(startParams(func(p *StartParams) { p.MaxTokens, p.Steps = tt.maxTokens, tt.steps }))
		if err != nil {
			t.Fatalf("maxTokens %d: %v", tt.maxTokens, err)
		}
		b, err := hostBudget(in)
		var e *Error
		switch {
		case tt.wantCode != 0:
			if !errors.As(err, &e) || e.Code != tt.wantCode || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("maxTokens %d: got %v; want error code %d saying %q", tt.maxTokens, err, tt.wantCode, tt.says)
			}
		case err != nil || b == nil || b.Limits().MaxTokens != tt.want:
			t.Errorf("maxTokens %d: budget %+v, %v; want one with token limit %d", tt.maxTokens, b.Limits(), err, tt.want)
		}
	}
	var p StartParams
	err := DecodeParams(json.RawMessage(`{"tabId":1,"goal":"g","origins":["https://example.com"],"maxCostUsd":0.5}`), &p)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeBadParams {
		t.Errorf("a cost budget in the start parameters: got %v; want bad parameters", err)
	}
}

// TestHostAgents: a task whose hints name steps runs them without a
// model; one whose hints hold only a budget or a classification is a
// model task (no model configured: a config error, not a steps error).
func TestHostAgents(t *testing.T) {
	h := &host{o: Options{ConfigPath: "host.json"}}
	for _, tt := range []struct {
		name     string
		p        StartParams
		wantCode Code // 0: a steps task
	}{
		{"steps", startParams(func(p *StartParams) { p.Steps = []string{"extract text"} }), 0},
		{"steps and a budget", startParams(func(p *StartParams) { p.Steps, p.MaxTokens = []string{"extract text"}, 100 }), 0},
		{"a budget", startParams(func(p *StartParams) { p.MaxTokens = 100 }), CodeConfig},
		{"a classification", startParams(func(p *StartParams) { p.Classification = "public" }), CodeConfig},
		{"bad steps", startParams(func(p *StartParams) { p.Steps = []string{"fly away"} }), CodeBadParams},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, err := taskOf(tt.p)
			if err != nil {
				t.Fatal(err)
			}
			_, nav, model, err := h.agents(in, nil, nil)
			var e *Error
			switch {
			case tt.wantCode != 0:
				if !errors.As(err, &e) || e.Code != tt.wantCode {
					t.Errorf("got %v; want error code %d", err, tt.wantCode)
				}
			case err != nil || nav == nil || model != "":
				t.Errorf("got %v, model %q; want a steps task", err, model)
			}
		})
	}
}
