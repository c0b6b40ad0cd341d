package audit

import (
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// TestBundleClassification: the classification a decision is re-judged
// under is the one the session's observations recorded (a sensitive
// session's denied vision stays denied in policy diff and replay), the
// first observation that names one; "" when none does.
func TestBundleClassification(t *testing.T) {
	obs := func(c contract.Classification) *Observed {
		return &Observed{Observation: contract.Observation{State: contract.State{PolicyContext: contract.PolicyContext{Classification: c}}}}
	}
	tests := []struct {
		name string
		b    Bundle
		want contract.Classification
	}{
		{"none", Bundle{}, ""},
		{"initial", Bundle{Initial: []*Observed{obs(contract.ClassSensitive)}}, contract.ClassSensitive},
		{"after a step", Bundle{Initial: []*Observed{obs("")}, Steps: []*Step{{After: []*Observed{obs(contract.ClassPublic)}}}}, contract.ClassPublic},
		{"initial first", Bundle{Initial: []*Observed{obs(contract.ClassRestricted)}, Steps: []*Step{{After: []*Observed{obs(contract.ClassPublic)}}}}, contract.ClassRestricted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.classification(); got != tt.want {
				t.Errorf("classification() = %q, want %q", got, tt.want)
			}
		})
	}
}
