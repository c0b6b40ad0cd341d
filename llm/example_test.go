package llm_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/schemas"
)

// A client for a local OpenAI-compatible server (Ollama, vLLM, llama.cpp
// server, LM Studio): ask for a plan under the plan schema, decode it
// strictly, and record the call for the evidence.
func ExampleClient_Complete() {
	// A stand-in for the endpoint.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"model":"qwen2.5:7b","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",
		  "content":"{\"goal\":\"Sign in\",\"steps\":[{\"id\":\"s1\",\"description\":\"Open /login and sign in\",\"successCriteria\":\"Signed in as alice\"}]}"}}],
		  "usage":{"prompt_tokens":812,"completion_tokens":41,"total_tokens":853}}`)
	}))
	defer srv.Close()

	key, err := llm.LoadAPIKey("") // OPENAI_API_KEY, or none for a local server
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", Model: "qwen2.5:7b", APIKey: key})
	if err != nil {
		fmt.Println(err)
		return
	}
	schema, err := llm.SchemaFor(schemas.KindPlan)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := c.Complete(context.Background(), llm.Request{
		Purpose:  llm.PurposePlan,
		System:   "You plan browser tasks.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: `{"goal":"Sign in"}`}},
		Schema:   schema,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var plan contract.Plan
	if err := contract.Decode(schemas.KindPlan, llm.Normalize(resp.Content), &plan); err != nil {
		fmt.Println("invalid plan:", err)
		return
	}
	fmt.Println(plan.Steps[0].Description)
	rec := resp.Record(nil)
	fmt.Println(rec.Model, rec.PromptTokens, rec.CompletionTokens, rec.TotalTokens, rec.Attempts, rec.Mode, len(rec.PromptHash))
	// Output:
	// Open /login and sign in
	// qwen2.5:7b 812 41 853 1 json_schema 64
}
