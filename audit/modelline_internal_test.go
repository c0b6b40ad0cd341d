package audit

import (
	"testing"

	"github.com/aegis-run/aegis/contract"
)

func TestModelLine(t *testing.T) {
	d := "sha256:46e0c10c039e019119339687c3c1757cc81b9da49709a3b3924863ba87ca666e"
	tests := []struct {
		name string
		v    contract.Versions
		want string
	}{
		{"no model", contract.Versions{}, ""},
		{"unchecked", contract.Versions{Model: "gpt-4o"}, " Model gpt-4o (identity not checked: no model registry)."},
		{"id", contract.Versions{Model: "gpt-4o", ModelID: "gpt-4o"}, " Model gpt-4o: the endpoint reported id gpt-4o, checked against the model registry."},
		{"digest", contract.Versions{Model: "llama3.1:8b", ModelID: "llama3.1:8b", ModelDigest: d}, " Model llama3.1:8b: the endpoint reported id llama3.1:8b, digest " + d + ", checked against the model registry."},
		{"llama.cpp", contract.Versions{Model: "qwen", ModelID: "qwen", ModelPath: "/models/qwen.gguf", ModelPrices: &contract.ModelPrices{}}, " Model qwen: the endpoint reported id qwen, checked against the model registry (model file /models/qwen.gguf, as the llama.cpp server reported it: it reports no digest); priced at $0.00 and $0.00 per million prompt and completion tokens."},
		{"priced", contract.Versions{Model: "gpt-4o", ModelID: "gpt-4o", ModelPrices: &contract.ModelPrices{InputPerMTok: 2.5, OutputPerMTok: 10}}, " Model gpt-4o: the endpoint reported id gpt-4o, checked against the model registry; priced at $2.50 and $10.00 per million prompt and completion tokens."},
		{"local, priced at 0", contract.Versions{Model: "llama3.1:8b", ModelID: "llama3.1:8b", ModelDigest: d, ModelPrices: &contract.ModelPrices{}}, " Model llama3.1:8b: the endpoint reported id llama3.1:8b, digest " + d + ", checked against the model registry; priced at $0.00 and $0.00 per million prompt and completion tokens."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := modelLine(tt.v); got != tt.want {
				t.Errorf("modelLine = %q, want %q", got, tt.want)
			}
		})
	}
}
