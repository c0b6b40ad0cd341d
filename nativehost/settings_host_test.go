package nativehost_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/nativehost"
)

// TestConfigOverProtocol: the options page's requests read and write the
// host's configuration file; the key goes in and never comes out.
func TestConfigOverProtocol(t *testing.T) {
	const key = "sk-never-sent-back-123"
	var path string
	f := startHost(t, func(o *nativehost.Options) {
		path = o.ConfigPath
		if err := nativehost.SaveConfig(path, nativehost.Config{EvidenceDir: o.Config.EvidenceDir, Model: &nativehost.ModelConfig{Model: "m1", BaseURL: "http://127.0.0.1:1/v1", APIKey: key}}); err != nil {
			t.Fatal(err)
		}
	})
	f.hello()
	raw, err := f.call(nativehost.MethodConfigGet, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	var v nativehost.ConfigView
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(key)) || v.Path != path || v.Model == nil || v.Model.Model != "m1" || v.Model.APIKey != nativehost.KeySet {
		t.Fatalf("config.get = %s", raw)
	}

	for _, tc := range []struct {
		name string
		set  *nativehost.ModelSettings
		want string
	}{
		{"no model id", &nativehost.ModelSettings{BaseURL: "http://127.0.0.1:1/v1"}, "model.model is required"},
		{"key for another URL", &nativehost.ModelSettings{Model: "m2", BaseURL: "http://127.0.0.1:2/v1"}, "enter the API key again"},
		{"both a key and clear", &nativehost.ModelSettings{Model: "m2", APIKey: "sk-x", ClearAPIKey: true}, "not both"},
	} {
		before, _ := os.ReadFile(path)
		_, err := f.call(nativehost.MethodConfigSet, nativehost.ConfigSetParams{Model: tc.set})
		var e *nativehost.Error
		if !errors.As(err, &e) || e.Code != nativehost.CodeConfigRejected || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: error %v, want config_rejected saying %q", tc.name, err, tc.want)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("%s: the file changed", tc.name)
		}
	}

	raw, err = f.call(nativehost.MethodConfigSet, nativehost.ConfigSetParams{Model: &nativehost.ModelSettings{Model: "m2", BaseURL: "http://127.0.0.1:1/v1"}})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(key)) || !bytes.Contains(raw, []byte(`"apiKey":"set"`)) {
		t.Errorf("config.set = %s", raw)
	}
	c, err := nativehost.LoadConfig(path)
	if err != nil || c.Model.Model != "m2" || c.Model.APIKey != key {
		t.Errorf("the file holds %+v (%v): want m2 with the key kept", c.Model, err)
	}
	if _, err := f.call(nativehost.MethodConfigSet, nativehost.ConfigSetParams{}); err != nil {
		t.Fatal(err)
	}
	if c, _ := nativehost.LoadConfig(path); c.Model != nil || c.EvidenceDir == "" {
		t.Errorf("after removing the model: %+v", c)
	}
}

// TestBrokenConfigRunsNoSession: a host whose configuration does not load
// answers, says why once when a session is asked for, and runs none.
func TestBrokenConfigRunsNoSession(t *testing.T) {
	var path string
	f := startHost(t, func(o *nativehost.Options) {
		path = o.ConfigPath
		if err := os.WriteFile(path, []byte(`{"model": "gpt-4o"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		o.Config, o.ConfigErr = nativehost.LoadConfig(path)
		o.Config.EvidenceDir = filepath.Join(t.TempDir(), "evidence")
	})
	f.hello()
	_, err := f.call(nativehost.MethodStart, payTask())
	var e *nativehost.Error
	if !errors.As(err, &e) || e.Code != nativehost.CodeConfig || !strings.Contains(e.Message, `"model" must be an object`) || strings.Contains(e.Message, "nativehost:") {
		t.Fatalf("session.start: %v", err)
	}
	raw, err := f.call(nativehost.MethodConfigGet, nil)
	if err != nil || !bytes.Contains(raw, []byte(`\"model\" must be an object`)) || !bytes.Contains(raw, []byte(`"model":null`)) {
		t.Fatalf("config.get = %s, %v", raw, err)
	}
	select {
	case ev := <-f.events:
		t.Errorf("an event %s besides the answer: %s", ev.name, ev.data)
	default:
	}
}

// TestResultAndReasons: the end carries what the result panel shows, and
// each step the Navigator's reason and batch.
func TestResultAndReasons(t *testing.T) {
	srv := billModel(t)
	f := startHost(t, func(o *nativehost.Options) {
		o.Config.Model = &nativehost.ModelConfig{BaseURL: srv.URL, Model: "test-model"}
	})
	f.hello()
	p := payTask()
	p.Steps = nil
	f.start(p)
	var steps []nativehost.StepEvent
	var ended nativehost.EndedEvent
	for ended.Session == "" {
		select {
		case ev := <-f.events:
			switch ev.name {
			case nativehost.EventStep:
				var s nativehost.StepEvent
				if err := json.Unmarshal(ev.data, &s); err != nil {
					t.Fatal(err)
				}
				steps = append(steps, s)
			case nativehost.EventEnded:
				if err := json.Unmarshal(ev.data, &ended); err != nil {
					t.Fatal(err)
				}
			}
		case err := <-f.served:
			t.Fatalf("the host stopped: %v", err)
		}
	}
	if ended.Status != contract.SessionCompleted || ended.Result == nil {
		t.Fatalf("ended = %+v", ended)
	}
	r := ended.Result
	if r.ActionsExecuted < 1 || len(r.Artifacts) != 1 || r.Artifacts[0].Type != contract.ArtifactText || r.Artifacts[0].SourceURL != "http://127.0.0.1:9/billing" {
		t.Errorf("result = %+v", r)
	}
	var extract *nativehost.StepEvent
	for i := range steps {
		if steps[i].Type == contract.ActExtract {
			extract = &steps[i]
		}
	}
	if extract == nil || extract.Reason != "read the bill" || extract.Batch != 1 || extract.Index < 1 {
		t.Errorf("the extract's step: %+v", extract)
	}
}
