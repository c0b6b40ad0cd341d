package nativehost

import (
	"errors"
	"strings"
)

// The extension's options page reads and writes the host's model settings
// through these requests: the settings live in the host's configuration
// file (0600), never in the extension's storage, and the API key only ever
// goes in: the host says whether one is set, never what it is.
const (
	// MethodConfigGet returns the model settings: ConfigView.
	MethodConfigGet = "config.get"
	// MethodConfigSet replaces the model settings (ConfigSetParams) and
	// answers with the new ConfigView.
	MethodConfigSet = "config.set"
)

// The API key as ModelView shows it.
const (
	KeySet    = "set"
	KeyNotSet = "not set"
)

// ConfigView is what the options page sees of the host's configuration.
type ConfigView struct {
	// Path is the configuration file.
	Path string `json:"path"`
	// Model is the model settings; nil when none is configured.
	Model *ModelView `json:"model"`
	// Error says why the file does not load, "" when it does; Model is
	// then nil (config.set may still replace the model member).
	Error string `json:"error,omitempty"`
}

// ModelView is the model settings without the key.
type ModelView struct {
	BaseURL    string `json:"baseUrl"`
	Model      string `json:"model"`
	Azure      bool   `json:"azure"`
	APIVersion string `json:"apiVersion"`
	// APIKey is KeySet or KeyNotSet.
	APIKey string `json:"apiKey"`
}

// ConfigSetParams replaces the model settings.
type ConfigSetParams struct {
	// Model is the new settings; null removes the model (only steps tasks
	// run then).
	Model *ModelSettings `json:"model"`
}

// ModelSettings are the model settings as the options page writes them.
type ModelSettings struct {
	BaseURL    string `json:"baseUrl"`
	Model      string `json:"model"`
	Azure      bool   `json:"azure,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	// APIKey is a new key; "" keeps the stored one (for the same base
	// URL only) unless ClearAPIKey.
	APIKey string `json:"apiKey,omitempty"`
	// ClearAPIKey removes the stored key (a local server needs none).
	ClearAPIKey bool `json:"clearApiKey,omitempty"`
}

// viewOf returns what the options page may see of c.
func viewOf(path string, c Config) ConfigView {
	v := ConfigView{Path: path}
	if m := c.Model; m != nil {
		v.Model = &ModelView{BaseURL: m.BaseURL, Model: m.Model, Azure: m.Azure, APIVersion: m.APIVersion, APIKey: KeyNotSet}
		if m.APIKey != "" {
			v.Model.APIKey = KeySet
		}
	}
	return v
}

// configGet reads the configuration file afresh (another host process may
// have written it).
func (h *host) configGet() (ConfigView, error) {
	if h.o.ConfigPath == "" {
		return ConfigView{}, errorf(CodeUnsupported, "this host has no configuration file")
	}
	c, err := LoadConfig(h.o.ConfigPath)
	if err != nil {
		return ConfigView{Path: h.o.ConfigPath, Error: configMessage(err)}, nil
	}
	return viewOf(h.o.ConfigPath, c), nil
}

// configSet validates the new model settings with the whole file and
// writes the file atomically. It takes effect for the sessions of host
// processes started afterwards (each popup session starts one).
func (h *host) configSet(p ConfigSetParams) (ConfigView, error) {
	if h.o.ConfigPath == "" {
		return ConfigView{}, errorf(CodeUnsupported, "this host has no configuration file")
	}
	var m *ModelConfig
	keep := false
	if s := p.Model; s != nil {
		m = &ModelConfig{BaseURL: strings.TrimSpace(s.BaseURL), Model: strings.TrimSpace(s.Model), APIKey: strings.TrimSpace(s.APIKey), Azure: s.Azure, APIVersion: strings.TrimSpace(s.APIVersion)}
		keep = !s.ClearAPIKey
		if s.ClearAPIKey && m.APIKey != "" {
			return ConfigView{}, errorf(CodeConfigRejected, "give a new API key or clear the stored one, not both")
		}
	}
	c, err := SetModel(h.o.ConfigPath, m, keep)
	if err != nil {
		h.log.printf("config.set refused: %s", configMessage(err))
		return ConfigView{}, errorf(CodeConfigRejected, "%s", configMessage(err))
	}
	h.log.printf("the model settings were changed from the extension (model %q)", bound(modelName(c), 64))
	return viewOf(h.o.ConfigPath, c), nil
}

func modelName(c Config) string {
	if c.Model == nil {
		return ""
	}
	return c.Model.Model
}

// configMessage is a configuration error in the words the extension
// shows: without the package prefix. It names members, never values.
func configMessage(err error) string {
	s := err.Error()
	var e *Error
	if errors.As(err, &e) {
		s = e.Message
	}
	return bound(strings.TrimPrefix(s, "nativehost: "), maxMessage)
}
