package seedtest

import "testing"

func TestCheckEvent(t *testing.T) {
	tests := []struct {
		raw  string
		want bool
	}{
		{`{"type":"session.started","computerUseSessionId":"s1","timestamp":"2026-11-21T12:00:00Z"}`, true},
		{`{"type":"error","code":"bad_request","message":"m","timestamp":"2026-11-21T12:00:00.5Z"}`, true},
		{`{"type":"session.started","computerUseSessionId":"s1","timestamp":"yesterday"}`, false},
		{`{"type":"error","code":"x","message":"m","timestamp":"2026-11-21T12:00:00Z","extra":1}`, false},
		{`{"type":"action","actionId":"a1","actionType":"hover","riskLevel":"low","summary":"s","timestamp":"2026-11-21T12:00:00Z"}`, false},
		{`not json`, false},
	}
	for _, tt := range tests {
		if got := CheckEvent([]byte(tt.raw)) == nil; got != tt.want {
			t.Errorf("CheckEvent(%s) valid = %v, want %v", tt.raw, got, tt.want)
		}
	}
}
