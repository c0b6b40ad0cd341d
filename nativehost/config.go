package nativehost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/secrets"
)

// EnvConfig names a host configuration file to use instead of the default
// one (ConfigPath).
const EnvConfig = "AEGIS_HOST_CONFIG"

// MaxConfigBytes bounds the configuration file.
const MaxConfigBytes = 1 << 20

// Config is the host's configuration file: what the popup may not hold.
// Model settings and secrets live here, in a file only its owner may read
// or write (0600), and never in the extension's storage, where any code
// running in the extension (or a profile sync) could read them.
type Config struct {
	// Model is the model the Planner and the Navigator ask; nil means
	// none, and only steps tasks run.
	Model *ModelConfig `json:"model,omitempty"`
	// Secrets are values the Navigator may type through {{secret:NAME}}
	// placeholders; the model, the evidence and the extension's events
	// only ever see the placeholders. Each is
	// {"value": "...", "origins": ["https://shop.example"]}: the origins it
	// may be typed on are required (Validate), since the extension's task
	// starts on whatever tab is open, which a default to the task's first
	// origin would trust. A plain string (the value alone) is read, and
	// refused by Validate with what to write instead.
	Secrets map[string]Secret `json:"secrets,omitempty"`
	// EvidenceDir is where evidence bundles are written (one directory per
	// session); "" means DefaultEvidenceDir.
	EvidenceDir string `json:"evidenceDir,omitempty"`
	// Policy is a policy bundle (directory or .tar.gz) to use instead of
	// the embedded policy; "" means the embedded one.
	Policy string `json:"policy,omitempty"`
	// Manifests are the host manifests "aegis install" wrote: the origin
	// check reads their allowed_origins (besides the browsers' usual
	// locations).
	Manifests []string `json:"manifests,omitempty"`
	// LogFile, when set, receives the host's log (appended, 0600) besides
	// stderr.
	LogFile string `json:"logFile,omitempty"`
	// ApprovalTimeoutSeconds bounds how long the person may take to
	// answer an approval request (default 300); no answer is a refusal.
	ApprovalTimeoutSeconds int `json:"approvalTimeoutSeconds,omitempty"`
	// Listen, when set, serves the live channel (stream, control and web
	// console; see live/PROTOCOL.md) on this address, loopback unless a
	// host is named: a CI bot or a second screen can then watch, approve
	// (whichever of it and the popup answers first) and abort.
	Listen string `json:"listen,omitempty"`
	// LiveTokenFile is where the live channel's bearer token is written
	// (0600); "" means a file in the user cache directory.
	LiveTokenFile string `json:"liveTokenFile,omitempty"`
}

// Secret is one secret of the host configuration: its value, and the
// origins it is bound to (see secrets.Secret). In the file it is a string
// when it declares no origins, {"value", "origins"} otherwise.
type Secret struct {
	// Value is the secret's value.
	Value string `json:"value"`
	// Origins are the http(s) origins it may be typed on; at least one.
	Origins []string `json:"origins,omitempty"`
}

// UnmarshalJSON reads a string (the value) or {"value", "origins"}. Its
// errors never quote the value.
func (s *Secret) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*s = Secret{}
		if err := json.Unmarshal(b, &s.Value); err != nil {
			return errors.New("a secret's value is not a valid JSON string")
		}
		return nil
	}
	type plain Secret
	var p plain
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		return errors.New(`a secret is a string or {"value": "...", "origins": ["https://..."]}`)
	}
	*s = Secret(p)
	return nil
}

// MarshalJSON writes a secret without origins as its value alone, as the
// configuration has always held it.
func (s Secret) MarshalJSON() ([]byte, error) {
	if len(s.Origins) == 0 {
		return json.Marshal(s.Value)
	}
	type plain Secret
	return json.Marshal(plain(s))
}

// SecretSet returns the configuration's secrets as a session's set, each
// bound to its origins.
func (c Config) SecretSet() (*secrets.Set, error) {
	m := make(map[string]secrets.Secret, len(c.Secrets))
	for name, s := range c.Secrets {
		m[name] = secrets.Secret{Value: s.Value, Origins: s.Origins}
	}
	return secrets.NewBoundSet(m)
}

// ModelConfig is an OpenAI-compatible endpoint (llm.Config).
type ModelConfig struct {
	// BaseURL is the endpoint up to and including /v1; "" is OpenAI's.
	BaseURL string `json:"baseUrl,omitempty"`
	// Model is the model id. Required.
	Model string `json:"model"`
	// APIKey is the bearer token; "" sends none (local servers).
	APIKey string `json:"apiKey,omitempty"`
	// Azure selects the Azure OpenAI protocol, with APIVersion.
	Azure      bool   `json:"azure,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// LLM returns the model's llm.Config.
func (m *ModelConfig) LLM() llm.Config {
	return llm.Config{BaseURL: m.BaseURL, Model: m.Model, APIKey: llm.Key(m.APIKey), Azure: m.Azure, APIVersion: m.APIVersion}
}

// ConfigPath returns the host's configuration file: $AEGIS_HOST_CONFIG, else
// host.json in the user's configuration directory (such as
// ~/.config/aegis/host.json on Linux, ~/Library/Application
// Support/aegis/host.json on macOS).
func ConfigPath() (string, error) {
	if p := os.Getenv(EnvConfig); p != "" {
		return filepath.Abs(p)
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("nativehost: no configuration directory: %w", err)
	}
	return filepath.Join(d, "aegis", "host.json"), nil
}

// DefaultEvidenceDir is where evidence bundles go when the configuration
// names no directory: evidence/ in the user's data directory
// ($XDG_DATA_HOME/aegis/evidence, ~/.local/share/aegis/evidence on Linux;
// ~/Library/Application Support/aegis/evidence on macOS;
// %LOCALAPPDATA%\aegis\evidence on Windows).
func DefaultEvidenceDir() (string, error) {
	switch runtime.GOOS {
	case "windows":
		if d := os.Getenv("LOCALAPPDATA"); d != "" {
			return filepath.Join(d, "aegis", "evidence"), nil
		}
	case "darwin":
		if d, err := os.UserConfigDir(); err == nil {
			return filepath.Join(d, "aegis", "evidence"), nil
		}
	default:
		if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
			return filepath.Join(d, "aegis", "evidence"), nil
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("nativehost: no home directory for the evidence: %w", err)
	}
	return filepath.Join(home, ".local", "share", "aegis", "evidence"), nil
}

// ErrConfigPermissions is returned for a configuration file that others
// may read or write.
var ErrConfigPermissions = errors.New("nativehost: the configuration file may be read or written by others (chmod 600 it)")

// LoadConfig reads the configuration file at path. A missing file is an
// empty configuration. Like ssh with a private key, it refuses a file that
// the group or others may read or write (on Unix), one that is not a
// regular file, and one over MaxConfigBytes; unknown members are refused.
// Errors never quote the file's content.
//
// On an error in the file's content (a *ContentError) it returns, besides the error, a
// configuration holding only the members the host needs to check its
// caller (manifests), when they decode on their own: the host then still
// answers the extension (which shows the error and may repair the model
// settings, config.set) but runs no session.
func LoadConfig(path string) (Config, error) {
	b, err := readConfigFile(path)
	if err != nil {
		return Config{}, err
	}
	c, err := parseConfig(b)
	if err != nil {
		return salvage(b), &ContentError{Path: path, Err: err}
	}
	return c, nil
}

// ContentError is an error in the content of the configuration file (not
// JSON, a member of the wrong type or unknown, a value Validate refuses),
// as opposed to a file that may not be read (permissions, size, type): the
// host still answers the extension with it (Options.ConfigErr), so that
// the options page can show it and repair the model settings.
type ContentError struct {
	// Path is the configuration file.
	Path string
	// Err says what is wrong, naming members, never values.
	Err error
}

// Error returns the file and what is wrong with it.
func (e *ContentError) Error() string {
	return "nativehost: configuration " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *ContentError) Unwrap() error { return e.Err }

// salvage returns the manifests of a configuration that does not load,
// when they decode on their own and are absolute paths.
func salvage(b []byte) Config {
	var raw map[string]json.RawMessage
	var c Config
	if json.Unmarshal(b, &raw) != nil || json.Unmarshal(raw["manifests"], &c.Manifests) != nil {
		return Config{}
	}
	for _, m := range c.Manifests {
		if !filepath.IsAbs(m) {
			return Config{}
		}
	}
	return c
}

// ErrKeyElsewhere refuses to keep the stored API key for a model at
// another base URL: the key is sent only where it was saved for.
var ErrKeyElsewhere = errors.New("the base URL changed: enter the API key again (a stored key is only ever sent to the base URL it was saved with)")

// SetModel replaces the model settings of the configuration file at path
// and writes it atomically (SaveConfig), keeping every other member. m nil
// removes the model. With keepKey and an empty m.APIKey the stored key is
// kept, but only for the same base URL (ErrKeyElsewhere otherwise). The
// file's other members must load (a file that is not JSON is refused);
// its model member may be broken: it is what this replaces. The result is
// validated as a whole before anything is written.
func SetModel(path string, m *ModelConfig, keepKey bool) (Config, error) {
	b, err := readConfigFile(path)
	if err != nil {
		return Config{}, err
	}
	raw := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &raw); err != nil {
			return Config{}, fmt.Errorf("nativehost: configuration %s: %w: fix the file by hand first", path, describeDecodeError(err))
		}
	}
	if m != nil {
		mc := *m
		if keepKey && mc.APIKey == "" {
			var old ModelConfig
			if json.Unmarshal(raw["model"], &old) == nil && old.APIKey != "" {
				if old.BaseURL != mc.BaseURL {
					return Config{}, ErrKeyElsewhere
				}
				mc.APIKey = old.APIKey
			}
		}
		enc, err := json.Marshal(mc)
		if err != nil {
			return Config{}, err
		}
		raw["model"] = enc
	} else {
		delete(raw, "model")
	}
	enc, err := json.Marshal(raw)
	if err != nil {
		return Config{}, err
	}
	c, err := parseConfig(enc)
	if err != nil {
		return Config{}, fmt.Errorf("nativehost: configuration %s: %w", path, err)
	}
	if err := SaveConfig(path, c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// readConfigFile returns the bytes of the configuration file at path, nil
// for a missing file, after the checks LoadConfig describes.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("nativehost: configuration: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("nativehost: configuration: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("nativehost: configuration %s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is %v", ErrConfigPermissions, path, st.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("nativehost: configuration: %w", err)
	}
	if len(b) > MaxConfigBytes {
		return nil, fmt.Errorf("nativehost: configuration %s is over %d bytes", path, MaxConfigBytes)
	}
	return b, nil
}

// parseConfig decodes and validates the JSON of a configuration; empty
// bytes are an empty configuration. Its errors name members, never values.
func parseConfig(b []byte) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(b)) == 0 {
		return c, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return Config{}, describeDecodeError(err)
	}
	if d.More() {
		return Config{}, errors.New("data after the JSON object")
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// configShapes says what each member of the configuration holds, for
// errors about a member of the wrong type.
var configShapes = map[string]string{
	"model":                  `an object: {"model": "gpt-4o-mini", "baseUrl": "https://api.openai.com/v1", "apiKey": "sk-..."}`,
	"model.model":            `a string, the model id ("gpt-4o-mini")`,
	"model.baseUrl":          `a string, the endpoint up to /v1 ("https://api.openai.com/v1")`,
	"model.apiKey":           "a string",
	"model.azure":            "true or false",
	"model.apiVersion":       `a string ("2024-06-01")`,
	"secrets":                `an object: {"NAME": {"value": "...", "origins": ["https://shop.example"]}}`,
	"evidenceDir":            "a string, an absolute path",
	"policy":                 "a string, an absolute path",
	"manifests":              "a list of absolute paths",
	"logFile":                "a string, an absolute path",
	"approvalTimeoutSeconds": "a number of seconds, 0 to 3600",
	"listen":                 `a string, an address ("127.0.0.1:7777")`,
	"liveTokenFile":          "a string, an absolute path",
}

// configMembers lists the top-level members, for unknown-member errors.
const configMembers = "model, secrets, evidenceDir, policy, manifests, logFile, approvalTimeoutSeconds, listen, liveTokenFile"

// describeDecodeError turns a JSON decoding error into one a person can
// act on: where the JSON breaks, which member has the wrong type and what
// it should hold, which member is unknown. It names members, never values.
func describeDecodeError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("not valid JSON (at byte %d)", se.Offset)
	case errors.As(err, &te):
		field := te.Field
		if shape, ok := configShapes[field]; ok {
			return fmt.Errorf("%q must be %s, not a JSON %s", field, shape, te.Value)
		}
		if field == "" {
			return fmt.Errorf("the configuration must be a JSON object, not a JSON %s", te.Value)
		}
		return fmt.Errorf("%q has the wrong type: a JSON %s where %s belongs", field, te.Value, te.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("unknown member %s (the members are %s; the model's are model, baseUrl, apiKey, azure, apiVersion)", strings.TrimPrefix(err.Error(), "json: unknown field "), configMembers)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("not valid JSON (it ends too early)")
	}
	// Other errors (a secret's own) name no values either.
	return err
}

// Validate checks the configuration's values.
func (c Config) Validate() error {
	if c.Model != nil {
		if strings.TrimSpace(c.Model.Model) == "" {
			return errors.New("model.model is required when a model is configured")
		}
		if c.Model.BaseURL != "" && !strings.HasPrefix(c.Model.BaseURL, "http://") && !strings.HasPrefix(c.Model.BaseURL, "https://") {
			return errors.New("model.baseUrl must be an http(s) URL")
		}
		if strings.ContainsAny(c.Model.APIKey, "\r\n") {
			return errors.New("model.apiKey contains a line break")
		}
	}
	for _, p := range append([]string{c.EvidenceDir, c.Policy, c.LogFile}, c.Manifests...) {
		if p != "" && !filepath.IsAbs(p) {
			return fmt.Errorf("path %q must be absolute", p)
		}
	}
	for name, sec := range c.Secrets {
		if len(sec.Value) < secrets.MinValueLen {
			return fmt.Errorf("secrets.%s: the value is shorter than %d bytes: it could not be masked safely", name, secrets.MinValueLen)
		}
		if len(sec.Origins) == 0 {
			return fmt.Errorf(`secrets.%s: no origins: write {"value": "...", "origins": ["https://shop.example"]} with the origins it may be typed on (the extension's task starts on whatever tab is open, so the host never guesses them)`, name)
		}
		if len(sec.Origins) > secrets.MaxOrigins {
			return fmt.Errorf("secrets.%s: more than %d origins", name, secrets.MaxOrigins)
		}
		for _, o := range sec.Origins {
			if _, err := secrets.ParseOrigin(o); err != nil {
				return fmt.Errorf("secrets.%s: %w", name, err)
			}
		}
	}
	if c.ApprovalTimeoutSeconds < 0 || c.ApprovalTimeoutSeconds > 3600 {
		return errors.New("approvalTimeoutSeconds must be within 0..3600")
	}
	return nil
}

// SaveConfig writes c to path atomically, as a file only its owner may
// read or write (0600), in a directory created 0700 if missing.
func SaveConfig(path string, c Config) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("nativehost: configuration: %w", err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("nativehost: configuration: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".host-*.json")
	if err != nil {
		return fmt.Errorf("nativehost: configuration: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return fmt.Errorf("nativehost: configuration: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("nativehost: configuration: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("nativehost: configuration: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("nativehost: configuration: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("nativehost: configuration: %w", err)
	}
	return nil
}
