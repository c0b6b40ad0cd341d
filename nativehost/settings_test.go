package nativehost

import (
	"bytes"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "host.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigErrors: a configuration a person got wrong gets an error that
// says which member and what it should hold, never Go's type names, never
// a value.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          string
	}{
		{"model as a string", `{"model": "gpt-4o-secretish"}`, `"model" must be an object: {"model": "gpt-4o-mini", "baseUrl": "https://api.openai.com/v1", "apiKey": "sk-..."}, not a JSON string`},
		{"model id as a number", `{"model": {"model": 4}}`, `"model.model" must be a string, the model id ("gpt-4o-mini"), not a JSON number`},
		{"timeout as a string", `{"approvalTimeoutSeconds": "300"}`, `"approvalTimeoutSeconds" must be a number of seconds, 0 to 3600, not a JSON string`},
		{"unknown member", `{"models": {}}`, `unknown member "models" (the members are model, secrets,`},
		{"unknown model member", `{"model": {"model": "m", "key": "sk-x"}}`, `unknown member "key"`},
		{"not JSON", `{"model": `, "not valid JSON"},
		{"a list", `[]`, "the configuration must be a JSON object, not a JSON array"},
		{"invalid value", `{"model": {"model": ""}}`, "model.model is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeConfig(t, tc.content)
			_, err := LoadConfig(p)
			var ce *ContentError
			if err == nil || !errors.As(err, &ce) {
				t.Fatalf("error %v, want a *ContentError", err)
			}
			got := err.Error()
			if !strings.Contains(got, tc.want) || strings.Contains(got, "Go struct") || strings.Contains(got, "secretish") || strings.Contains(got, "sk-x") {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	// A file others may read is not a content error: the host stops.
	p := writeConfig(t, `{}`)
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	var ce *ContentError
	if _, err := LoadConfig(p); !errors.Is(err, ErrConfigPermissions) || errors.As(err, &ce) {
		t.Errorf("readable file: %v", err)
	}
}

func TestLoadConfigSalvagesManifests(t *testing.T) {
	p := writeConfig(t, `{"model": "x", "manifests": ["/etc/m.json"]}`)
	c, err := LoadConfig(p)
	if err == nil || len(c.Manifests) != 1 || c.Manifests[0] != "/etc/m.json" || c.Model != nil {
		t.Errorf("config %+v, error %v", c, err)
	}
}

func TestSetModel(t *testing.T) {
	const base = `{"model": {"model": "old", "baseUrl": "https://a.example/v1", "apiKey": "sk-old"}, "evidenceDir": "/tmp/ev", "secrets": {"PW": {"value": "a-long-secret", "origins": ["https://shop.example"]}}}`
	for _, tc := range []struct {
		name    string
		start   string
		m       *ModelConfig
		keep    bool
		wantErr string
		want    *ModelConfig
	}{
		{"new model, key kept", base, &ModelConfig{Model: "new", BaseURL: "https://a.example/v1"}, true, "", &ModelConfig{Model: "new", BaseURL: "https://a.example/v1", APIKey: "sk-old"}},
		{"new key", base, &ModelConfig{Model: "new", BaseURL: "https://a.example/v1", APIKey: "sk-new"}, true, "", &ModelConfig{Model: "new", BaseURL: "https://a.example/v1", APIKey: "sk-new"}},
		{"key cleared", base, &ModelConfig{Model: "new", BaseURL: "https://a.example/v1"}, false, "", &ModelConfig{Model: "new", BaseURL: "https://a.example/v1"}},
		{"key kept for another URL", base, &ModelConfig{Model: "new", BaseURL: "https://evil.example/v1"}, true, "enter the API key again", nil},
		{"another URL with a key", base, &ModelConfig{Model: "new", BaseURL: "https://b.example/v1", APIKey: "sk-b"}, true, "", &ModelConfig{Model: "new", BaseURL: "https://b.example/v1", APIKey: "sk-b"}},
		{"removed", base, nil, false, "", nil},
		{"invalid", base, &ModelConfig{Model: " ", BaseURL: "https://a.example/v1"}, true, "model.model is required", nil},
		{"bad URL", base, &ModelConfig{Model: "m", BaseURL: "ftp://a.example", APIKey: "sk-x"}, true, "model.baseUrl must be an http(s) URL", nil},
		{"broken model repaired", `{"model": "gpt-4o", "evidenceDir": "/tmp/ev"}`, &ModelConfig{Model: "gpt-4o"}, true, "", &ModelConfig{Model: "gpt-4o"}},
		{"empty file", ``, &ModelConfig{Model: "m"}, true, "", &ModelConfig{Model: "m"}},
		{"not JSON", `{"model": `, &ModelConfig{Model: "m"}, true, "fix the file by hand", nil},
		{"another member broken", `{"evidenceDir": "relative"}`, &ModelConfig{Model: "m"}, true, "must be absolute", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeConfig(t, tc.start)
			c, err := SetModel(p, tc.m, tc.keep)
			after, _ := os.ReadFile(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if string(after) != tc.start {
					t.Error("a refused change wrote the file")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			loaded, err := LoadConfig(p)
			if err != nil {
				t.Fatalf("the written file does not load: %v", err)
			}
			for _, got := range []Config{c, loaded} {
				if (got.Model == nil) != (tc.want == nil) || got.Model != nil && *got.Model != *tc.want {
					t.Errorf("model %+v, want %+v", got.Model, tc.want)
				}
				if got.EvidenceDir != "/tmp/ev" && tc.start != "" {
					t.Errorf("evidenceDir %q: other members must be kept", got.EvidenceDir)
				}
			}
			if strings.Contains(tc.start, "a-long-secret") && loaded.Secrets["PW"].Value != "a-long-secret" {
				t.Error("the secrets were not kept")
			}
			if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v", st.Mode().Perm())
			}
		})
	}
}

// TestConfigView: the key never leaves the host.
func TestConfigView(t *testing.T) {
	v := viewOf("/x/host.json", Config{Model: &ModelConfig{Model: "m", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-very-secret"}})
	b, _ := json.Marshal(v)
	if bytes.Contains(b, []byte("sk-very-secret")) || v.Model.APIKey != KeySet {
		t.Errorf("view %s", b)
	}
	if v := viewOf("/x", Config{Model: &ModelConfig{Model: "m"}}); v.Model.APIKey != KeyNotSet {
		t.Errorf("view %+v", v.Model)
	}
	if b, _ := json.Marshal(viewOf("/x", Config{})); !bytes.Contains(b, []byte(`"model":null`)) {
		t.Errorf("no model: %s", b)
	}
}

func TestSubmitValues(t *testing.T) {
	set, err := secrets.NewBoundSet(map[string]secrets.Secret{"PW": {Value: "hunter2-hunter2", Origins: []string{"https://shop.example"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  session.ApprovalRequest
		want []SubmitValue
	}{
		{"placeholder", session.ApprovalRequest{Action: contract.Action{Type: contract.ActType, Text: "{{secret:PW}}"}}, []SubmitValue{{"text", "{{secret:PW}}"}}},
		{"a value is redacted", session.ApprovalRequest{Action: contract.Action{Type: contract.ActType, Text: "hunter2-hunter2"}}, []SubmitValue{{"text", "{{secret:PW}}"}}},
		{"select", session.ApprovalRequest{Action: contract.Action{Type: contract.ActSelect, Value: "express"}}, []SubmitValue{{"option", "express"}}},
		{"navigate", session.ApprovalRequest{Action: contract.Action{Type: contract.ActNavigate, URL: "https://shop.example/pay"}}, []SubmitValue{{"url", "https://shop.example/pay"}}},
		{"click", session.ApprovalRequest{Action: contract.Action{Type: contract.ActClick}}, nil},
		{"effect", session.ApprovalRequest{Action: contract.Action{Type: contract.ActClick}, Effect: &contract.Effect{Kind: "request", Method: "POST", Origin: "https://shop.example", Path: "/pay", Fields: []string{"card", "name"}}},
			[]SubmitValue{{"request", "POST https://shop.example/pay"}, {"fields (names only)", "card, name"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := submitValues(tc.req, set)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("got %+v, want %+v", got, tc.want)
				}
			}
		})
	}
}

func TestThumbnail(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "artifacts"), 0o700); err != nil {
		t.Fatal(err)
	}
	img := image.NewRGBA(image.Rect(0, 0, 1280, 800))
	for y := 0; y < 800; y++ {
		for x := 0; x < 1280; x++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 0x80, 0xff})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "artifacts", "shot-1.png"), buf.Bytes(), 0o600)
	os.WriteFile(filepath.Join(dir, "artifacts", "shot-1.json"), []byte(`{"id":"shot-1","uri":"artifacts/shot-1.png","actionId":"a7"}`), 0o600)
	th, err := thumbnail(dir, "artifacts/shot-1.png")
	if err != nil {
		t.Fatal(err)
	}
	if th.Width != ThumbnailWidth || th.Height != 200 || th.ActionID != "a7" || th.Mime != "image/jpeg" || len(th.Data) == 0 || len(th.Data) > MaxThumbnailBytes*4/3+4 {
		t.Errorf("thumbnail %dx%d, action %q, %s, %d bytes", th.Width, th.Height, th.ActionID, th.Mime, len(th.Data))
	}
	for _, uri := range []string{"../secret.png", "artifacts/../../x.png", "/etc/passwd", "dom/1.html", "artifacts/shot-1.json"} {
		if _, err := thumbnail(dir, uri); err == nil {
			t.Errorf("%q: read", uri)
		}
	}
}
