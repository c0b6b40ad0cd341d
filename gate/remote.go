package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/internal/text"
)

// maxRemoteResponse bounds a response of the remote OPA server.
const maxRemoteResponse = 4 << 20

// remoteEval evaluates against a running OPA server's data API: one POST of
// {"input": ...} to /v1/data/aegis/browser/decision per action. Any network
// error, non-200 status, undefined or malformed result is an error, and the
// gate fails closed.
type remoteEval struct {
	base   string
	client *http.Client
}

// checkOPAURL refuses URLs that are not http(s), carry userinfo, a query or
// a fragment, and plain http to anything but a loopback address: a decision
// that travels in clear text could be forged on the way.
func checkOPAURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("OPA URL %q: %w", raw, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("OPA URL %q: scheme must be http or https", raw)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Host == "":
		return "", fmt.Errorf("OPA URL %q: want scheme://host[:port][/path] only", raw)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return "", fmt.Errorf("OPA URL %q: plain http is accepted for loopback addresses only; use https", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newRemote(ctx context.Context, raw string, client *http.Client, timeout time.Duration) (evaluator, string, error) {
	base, err := checkOPAURL(raw)
	if err != nil {
		return nil, "", &PolicyLoadError{Path: raw, Stage: "read", Err: err}
	}
	if client == nil {
		client = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}}
	}
	r := &remoteEval{base: base, client: client}
	vctx, cancel := context.WithTimeout(ctx, 10*timeout+5*time.Second)
	defer cancel()
	version, err := r.version(vctx)
	if err != nil {
		return nil, "", &PolicyLoadError{Path: raw, Stage: "read", Err: err}
	}
	return r, version, nil
}

// version hashes the policy the server holds: SHA-256 over
// "aegis-remote-policy-v1", each module (GET /v1/policies) sorted by id as
// id, NUL, length, NUL, source, and the canonical JSON of data.aegis.config.
// It is computed once, when the gate is created.
func (r *remoteEval) version(ctx context.Context) (string, error) {
	var pol struct {
		Result []struct {
			ID  string `json:"id"`
			Raw string `json:"raw"`
		} `json:"result"`
	}
	if err := r.get(ctx, "/v1/policies", &pol); err != nil {
		return "", err
	}
	if len(pol.Result) == 0 {
		return "", errors.New("the OPA server holds no policy")
	}
	var cfg struct {
		Result json.RawMessage `json:"result"`
	}
	if err := r.get(ctx, "/v1/data/aegis/config", &cfg); err != nil {
		return "", err
	}
	sort.Slice(pol.Result, func(i, j int) bool { return pol.Result[i].ID < pol.Result[j].ID })
	h := sha256.New()
	io.WriteString(h, "aegis-remote-policy-v1\x00")
	for _, m := range pol.Result {
		io.WriteString(h, m.ID+"\x00"+strconv.Itoa(len(m.Raw))+"\x00"+m.Raw)
	}
	canon := []byte("null")
	if len(cfg.Result) > 0 {
		c, err := canonjson.Transform(cfg.Result)
		if err != nil {
			return "", fmt.Errorf("data.aegis.config: %w", err)
		}
		canon = c
	}
	io.WriteString(h, "data.aegis.config\x00")
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (r *remoteEval) get(ctx context.Context, p string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+p, nil)
	if err != nil {
		return err
	}
	return r.do(req, v)
}

func (r *remoteEval) do(req *http.Request, v any) error {
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("remote OPA: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteResponse+1))
	if err != nil {
		return fmt.Errorf("remote OPA: read %s: %w", req.URL.Path, err)
	}
	if len(body) > maxRemoteResponse {
		return fmt.Errorf("remote OPA: %s: response larger than %d bytes", req.URL.Path, maxRemoteResponse)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("remote OPA: %s %s: status %d: %s", req.Method, req.URL.Path, resp.StatusCode, text.CutRunes(strings.TrimSpace(string(body)), 256))
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("remote OPA: %s: malformed response: %w", req.URL.Path, err)
	}
	return nil
}

func (r *remoteEval) eval(ctx context.Context, input map[string]any, _ time.Time) (ast.Value, error) {
	body, err := json.Marshal(map[string]any{"input": input})
	if err != nil {
		return nil, fmt.Errorf("policy input: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/v1/data/"+QueryPath+"?strict-builtin-errors=true", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	var out struct {
		Result *any `json:"result"`
	}
	if err := r.do(req, &out); err != nil {
		return nil, err
	}
	if out.Result == nil {
		return nil, errUndefined
	}
	v, err := ast.InterfaceToValue(*out.Result)
	if err != nil {
		return nil, fmt.Errorf("remote OPA: result: %w", err)
	}
	return v, nil
}
