// Package driver is the one contract between aegis and a browser: a driver
// observes the page and carries out the actions the gate allowed. The
// Navigator never touches the page.
//
// The caller opens the driver it wants (seed 001 section 8, "a single
// contract"): Open serves the modes "playwright" and "sandbox" with the
// Playwright driver; OpenExtension serves "extension" over a connection to
// the aegis extension that the caller hands it.
//
// Both drivers see pages through the same JavaScript observer
// (extension/observer/, joined into one script). See README.md for the selector syntax, the
// observation's limits and what is dropped first.
package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// Driver observes one browser session and acts on it. Every method takes a
// context whose deadline bounds the call. A Driver serializes its calls;
// Close may be called at any time and makes every later call fail with
// ErrPageClosed.
type Driver interface {
	// Mode returns the mode the driver serves.
	Mode() contract.DriverMode
	// Observe captures the active page: its state, visible text, masked DOM
	// snapshot and affordances, and the records of the artifacts extracted
	// since the previous Observe.
	Observe(ctx context.Context, opts ObserveOptions) (contract.Observation, error)
	// Describe resolves selector to the one element it addresses on the
	// active page, so that the gate judges the real target of an action,
	// and reports the origin of the document it is in. A driver that
	// re-checks targets remembers what it reported (see Act).
	Describe(ctx context.Context, selector string) (contract.Element, error)
	// DescribeObserved is Describe, and what the element is to the last
	// Observe (Observed: whether it is the element that observation
	// listed under the same selector); Describe is DescribeObserved
	// without it.
	DescribeObserved(ctx context.Context, selector string) (contract.Element, Observed, error)
	// Act carries out one action and returns its ToolResult. The result is
	// always filled in and schema-valid when the action is; when the action
	// failed, OK is false, the result's Error holds the code and the
	// returned error is an *Error with the same code. A click, type or
	// select on a selector that Describe reported is re-checked when it is
	// carried out: if the element's facts or the page's origin changed,
	// nothing is done and the error is ErrTargetChanged (the Playwright
	// driver; see README.md).
	Act(ctx context.Context, action contract.Action) (contract.ToolResult, error)
	// TakeArtifacts returns the artifacts extracted since the previous
	// call, with their content (screenshot bytes), and forgets them.
	TakeArtifacts() []Extracted
	// Close ends the session: the browser context and everything in it is
	// discarded.
	Close(ctx context.Context) error
}

// Effects is told what the page does on the network, whatever caused it
// (the action, a script, a timer), so that the session can judge effects
// rather than words. A driver calls it from any goroutine, possibly from
// several at once.
type Effects interface {
	// Judge is asked about every state-changing request (not GET, HEAD or
	// OPTIONS) to an allowed origin, including form submissions; the
	// request waits for the answer, and a non-nil error refuses it. While a
	// Judge call is in flight, an action waiting for the navigation the
	// request belongs to keeps waiting (an approval may take minutes).
	Judge(ctx context.Context, e contract.Effect) error
	// Refused is told of every navigation, request, download or peer
	// channel the driver's boundary refused by itself (its origin is not
	// allowed, downloads and WebRTC are off); e.Refused says why.
	Refused(e contract.Effect)
}

// Blocker is implemented by drivers that filter the network (the
// Playwright driver with allowed origins, the extension driver):
// BlockedRequests returns what the browser
// was prevented from fetching or downloading, oldest first, at most
// MaxBlocked entries.
type Blocker interface {
	BlockedRequests() []BlockedRequest
}

// MaxBlocked bounds the blocked-request log a driver keeps; later entries
// are counted but not kept.
const MaxBlocked = 1000

// BlockedRequest is one request the driver refused.
type BlockedRequest struct {
	// URL is the request's URL, bounded to 2048 bytes.
	URL string `json:"url"`
	// Origin is the URL's origin ("" when it has none).
	Origin string `json:"origin,omitempty"`
	// ResourceType is the browser's resource type ("document", "image",
	// "fetch", "websocket", "download"...).
	ResourceType string `json:"resourceType"`
	// Reason says why it was refused.
	Reason string `json:"reason"`
	// Time is when it was refused.
	Time time.Time `json:"time"`
}

// Extracted is what one extract action produced.
type Extracted struct {
	// Artifact is the artifact record (artifacts/{id}.json); for a
	// screenshot its Value is Image.URI.
	Artifact contract.Artifact
	// Image is the image record of a screenshot; nil otherwise.
	Image *contract.ImageArtifact
	// Data holds the image bytes of a screenshot; nil otherwise.
	Data []byte
	// Masked counts the boxes painted over a screenshot in MaskColor
	// (tainted elements and sensitive fields, see mask.go); 0 when there
	// was nothing to mask. The record formats have no field for it.
	Masked int
}

// Config configures one driver session.
type Config struct {
	// Mode picks the driver: contract.ModePlaywright, contract.ModeSandbox
	// or contract.ModeExtension. Required.
	Mode contract.DriverMode
	// SessionID identifies the session in every state and ToolResult; a
	// random id when empty. It must match the schema's id pattern.
	SessionID string
	// AllowedOrigins lists the origins ("https://shop.example",
	// "http://127.0.0.1:8080") the session may reach. Whenever it is not
	// empty, every driver refuses every navigation and request of the
	// page to any other origin at the browser, whatever caused it
	// (playwright and sandbox: request routing and the filtering proxy;
	// extension: declarativeNetRequest rules on the session's tab). Sandbox
	// requires at least one origin.
	AllowedOrigins []string
	// Effects, when set, is told of every request the boundary refused and
	// asked about every state-changing request (see Effects). When nil,
	// state-changing requests to allowed origins go through unjudged and
	// refusals are only in BlockedRequests.
	Effects Effects
	// AllowWebRTC leaves WebRTC to the page. By default (false) WebRTC is
	// off in every mode: every frame gets RTCPeerConnection,
	// webkitRTCPeerConnection and RTCDataChannel replaced, before its
	// scripts run, by stand-ins that refuse (extension/webrtc.js; each
	// attempt is reported to Effects.Refused as a peer effect at the next
	// observation). Whatever this says, every browser the Playwright
	// driver launches keeps WebRTC off non-proxied UDP (see DefaultArgs),
	// and so does the extension while a session runs.
	AllowWebRTC bool
	// SensitiveSelectors are the policy's sensitive selectors (CSS). Values
	// of matching fields are masked in every observation and extraction, in
	// the page, like password fields are, and Describe reports the first one
	// an element matches (contract.Element.SensitiveSelector), which is how
	// the gate learns that a target is sensitive by them.
	SensitiveSelectors []string
	// BrowserEndpoint, when set, connects to a Playwright server
	// (ws://host:port/path, as "playwright run-server" prints) instead of
	// launching a browser. Ignored when Browser is set.
	BrowserEndpoint string
	// Headed shows the browser window; the default is headless.
	Headed bool
	// Browser, when set, is a running browser (see Launch) that the session
	// opens a fresh context in and leaves running on Close. When nil, Open
	// takes one from Browsers, else launches (or connects to) a browser of
	// its own and Close stops it.
	Browser *Browser
	// Browsers, when set (and Browser is nil), shares browsers among the
	// sessions of the process: Open opens a fresh context in the browser
	// of Browsers that this session's kind needs (Browsers.For), launching
	// it on first need, and Close leaves it running.
	Browsers *Browsers
	// AllowNoNetworkIsolation lets a sandbox session run in a browser
	// without a network namespace of its own (BrowserOptions.Isolate) where
	// none can be made or Browser was launched without one: the proxy and
	// request routing then filter HTTP, but UDP (WebRTC), DNS and other
	// non-HTTP traffic are not contained. Off by default: sandbox fails
	// closed.
	AllowNoNetworkIsolation bool
	// PolicyContext is copied into every observed state. Its zero fields
	// get defaults: classification restricted
	// (contract.DefaultClassification), step budget 100, decision log id
	// "dec-" + SessionID.
	PolicyContext contract.PolicyContext
	// Viewport is the page's size in CSS pixels; 1280x720 when zero.
	Viewport contract.Viewport
	// ActionTimeout bounds how long click, type and select wait for their
	// element to appear and become interactable, when the action and the
	// context set no shorter bound. Default 5s.
	ActionTimeout time.Duration
	// NavigationTimeout bounds a navigation. Default 30s.
	NavigationTimeout time.Duration
	// Observe holds the default observation limits; ObserveOptions given to
	// Observe override them field by field.
	Observe ObserveOptions
}

// Default timeouts and viewport.
const (
	DefaultActionTimeout     = 5 * time.Second
	DefaultNavigationTimeout = 30 * time.Second
	DefaultViewportWidth     = 1280
	DefaultViewportHeight    = 720
)

// ObserveOptions bounds one observation. Zero fields take the defaults;
// every field is capped at the schema's maximum. See README.md.
type ObserveOptions struct {
	// SensitiveSelectors are masked in addition to Config.SensitiveSelectors.
	SensitiveSelectors []string
	// MaxElements bounds how many elements the walk visits (default 50,000,
	// at most 200,000); elements past it are absent from everything.
	MaxElements int
	// MaxDepth bounds the nesting the walk enters (default 256, at most
	// 1024).
	MaxDepth int
	// MaxTextChars bounds domText (default 262,144, at most 1,048,576).
	MaxTextChars int
	// MaxSnapshotChars bounds domSnapshot (default 1,048,576, at most
	// 4,194,304).
	MaxSnapshotChars int
	// MaxAffordances bounds the affordances (default 2,000, at most 5,000).
	MaxAffordances int
	// MaxAffordanceText bounds each affordance's text (default 200, at most
	// 2,000).
	MaxAffordanceText int
	// MaxSelector bounds each affordance's selector (default 512, at most
	// 2,048); an element without a short enough unique selector is dropped.
	MaxSelector int
}

// Limits, defaults and schema maxima of an observation.
const (
	DefaultMaxElements       = 50000
	MaxMaxElements           = 200000
	DefaultMaxDepth          = 256
	MaxMaxDepth              = 1024
	DefaultMaxTextChars      = 262144
	MaxTextChars             = 1048576 // schema: domText maxLength
	DefaultMaxSnapshotChars  = 1048576
	MaxSnapshotChars         = 4194304 // schema: domSnapshot maxLength
	DefaultMaxAffordances    = 2000
	MaxAffordances           = 5000 // schema: affordances maxItems
	DefaultMaxAffordanceText = 200
	MaxAffordanceText        = 2000 // schema: affordance text maxLength
	DefaultMaxSelector       = 512
	MaxSelector              = 2048 // schema: selector maxLength
	MaxRole                  = 128  // schema: affordance role maxLength
	MaxTitle                 = 4096 // schema: title maxLength
	MaxURL                   = 2048 // schema: url maxLength
	MaxArtifactsPerObserve   = 256  // schema: extractedArtifacts maxItems
)

// TextTruncatedMarker ends a domText (or an extracted text) that was cut.
const TextTruncatedMarker = "\n[aegis: text truncated]"

// Mask replaces a sensitive value in every observation and extraction.
const Mask = "[masked]"

func pick(v, def, max int) int {
	if v <= 0 {
		return def
	}
	return min(v, max)
}

// merged returns o with zero fields taken from base, then defaults, and
// every field capped.
func (o ObserveOptions) merged(base ObserveOptions, sensitive []string) ObserveOptions {
	or := func(a, b int) int {
		if a > 0 {
			return a
		}
		return b
	}
	out := ObserveOptions{
		MaxElements:       pick(or(o.MaxElements, base.MaxElements), DefaultMaxElements, MaxMaxElements),
		MaxDepth:          pick(or(o.MaxDepth, base.MaxDepth), DefaultMaxDepth, MaxMaxDepth),
		MaxTextChars:      pick(or(o.MaxTextChars, base.MaxTextChars), DefaultMaxTextChars, MaxTextChars),
		MaxSnapshotChars:  pick(or(o.MaxSnapshotChars, base.MaxSnapshotChars), DefaultMaxSnapshotChars, MaxSnapshotChars),
		MaxAffordances:    pick(or(o.MaxAffordances, base.MaxAffordances), DefaultMaxAffordances, MaxAffordances),
		MaxAffordanceText: pick(or(o.MaxAffordanceText, base.MaxAffordanceText), DefaultMaxAffordanceText, MaxAffordanceText),
		MaxSelector:       pick(or(o.MaxSelector, base.MaxSelector), DefaultMaxSelector, MaxSelector),
	}
	seen := map[string]bool{}
	for _, list := range [][]string{sensitive, base.SensitiveSelectors, o.SensitiveSelectors} {
		for _, s := range list {
			if s != "" && !seen[s] {
				seen[s] = true
				out.SensitiveSelectors = append(out.SensitiveSelectors, s)
			}
		}
	}
	return out
}

// Open opens a Playwright driver (mode playwright or sandbox) for cfg,
// ready on a blank page, after validating cfg and filling in its defaults.
// The extension driver needs a connection to the extension: open it with
// OpenExtension.
func Open(ctx context.Context, cfg Config) (Driver, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	switch cfg.Mode {
	case contract.ModePlaywright, contract.ModeSandbox:
		return openPlaywright(ctx, cfg)
	case contract.ModeExtension:
		return nil, newErr(contract.CodeUnsupported, "", "the extension driver needs a connection to the aegis extension: open it with OpenExtension", nil)
	}
	return nil, fmt.Errorf("driver: unknown mode %q (want playwright, sandbox or extension)", cfg.Mode)
}

var idRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// NewSessionID returns a random session id ("s-" and 16 hex digits).
func NewSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "s-" + hex.EncodeToString(b[:])
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Mode == "" {
		return cfg, fmt.Errorf("driver: Config.Mode is required (playwright, sandbox or extension)")
	}
	if cfg.SessionID == "" {
		cfg.SessionID = NewSessionID()
	}
	if !idRe.MatchString(cfg.SessionID) {
		return cfg, fmt.Errorf("driver: session id %q is not a valid id (letters, digits, '.', '_', '-', at most 128)", cfg.SessionID)
	}
	origins := make([]string, 0, len(cfg.AllowedOrigins))
	for _, o := range cfg.AllowedOrigins {
		n, err := NormalizeOrigin(o)
		if err != nil {
			return cfg, fmt.Errorf("driver: allowed origin: %w", err)
		}
		origins = append(origins, n)
	}
	cfg.AllowedOrigins = origins
	if cfg.Mode == contract.ModeSandbox && len(origins) == 0 {
		return cfg, fmt.Errorf("driver: sandbox mode needs at least one allowed origin")
	}
	for _, s := range cfg.SensitiveSelectors {
		if s == "" || len(s) > MaxSelector {
			return cfg, fmt.Errorf("driver: sensitive selector %q: empty or longer than %d bytes", s, MaxSelector)
		}
	}
	if cfg.BrowserEndpoint != "" {
		u, err := url.Parse(cfg.BrowserEndpoint)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return cfg, fmt.Errorf("driver: browser endpoint %q is not a ws:// or wss:// URL", cfg.BrowserEndpoint)
		}
	}
	pc := &cfg.PolicyContext
	if pc.Classification == "" {
		pc.Classification = contract.DefaultClassification
	}
	if pc.MaxStepBudget <= 0 {
		pc.MaxStepBudget = 100
	}
	if pc.DecisionLogID == "" {
		pc.DecisionLogID = text.CutRunes("dec-"+cfg.SessionID, 128)
	}
	if cfg.Viewport.Width <= 0 {
		cfg.Viewport.Width = DefaultViewportWidth
	}
	if cfg.Viewport.Height <= 0 {
		cfg.Viewport.Height = DefaultViewportHeight
	}
	if cfg.Viewport.DeviceScaleFactor <= 0 {
		cfg.Viewport.DeviceScaleFactor = 1
	}
	if cfg.ActionTimeout <= 0 {
		cfg.ActionTimeout = DefaultActionTimeout
	}
	if cfg.NavigationTimeout <= 0 {
		cfg.NavigationTimeout = DefaultNavigationTimeout
	}
	return cfg, nil
}

// NormalizeOrigin returns the origin of an absolute http(s) URL or origin
// as "scheme://host[:port]": scheme and host lowercased, default ports
// dropped, path, query and fragment refused (an origin has none).
func NormalizeOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("origin %q: %w", s, err)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("origin %q has a path, query, fragment or user info", s)
	}
	o, ok := originOf(u)
	if !ok {
		return "", fmt.Errorf("origin %q is not an http or https origin", s)
	}
	return o, nil
}

// navigationTarget parses the URL of a navigate action and refuses what no
// driver navigates: a relative URL, a scheme other than http and https, no
// host. Whether the origin is allowed is each driver's next check.
func navigationTarget(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return nil, newErr(contract.CodeNavigationBlocked, "", "the URL is not absolute", nil)
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return nil, newErr(contract.CodeNavigationBlocked, "", fmt.Sprintf("scheme %q is refused: only http and https are navigated", text.CutRunes(s, 32)), nil)
	}
	if u.Host == "" {
		return nil, newErr(contract.CodeNavigationBlocked, "", "the URL has no host", nil)
	}
	return u, nil
}

// originOf returns the http(s) origin of u; ws and wss map to http and
// https.
func originOf(u *url.URL) (string, bool) {
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "ws":
		scheme = "http"
	case "wss":
		scheme = "https"
	}
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", false
	}
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		return scheme + "://" + host + ":" + port, true
	}
	return scheme + "://" + host, true
}

// DefaultRisk is the risk tag a driver writes into a ToolResult (seed 000:
// navigation high, input medium, observation low). The session overwrites
// it with the tag the gate assigned.
func DefaultRisk(t contract.ActionType) contract.RiskTag {
	switch t {
	case contract.ActNavigate:
		return contract.RiskHigh
	case contract.ActClick, contract.ActType, contract.ActSelect:
		return contract.RiskMedium
	}
	return contract.RiskLow
}

// ActAndObserve carries out action and then observes the page, setting the
// result's CaptureLatencyMs to the observation's duration, as seed 000's
// ToolResult wants. If the action failed, the observation is still taken
// (the page may have changed) and the action's error is returned.
func ActAndObserve(ctx context.Context, d Driver, action contract.Action, opts ObserveOptions) (contract.ToolResult, contract.Observation, error) {
	res, actErr := d.Act(ctx, action)
	start := time.Now()
	obs, obsErr := d.Observe(ctx, opts)
	if obsErr == nil {
		ms := msSince(start)
		res.CaptureLatencyMs = &ms
	}
	if actErr != nil {
		return res, obs, actErr
	}
	return res, obs, obsErr
}

func msSince(t time.Time) float64 {
	d := time.Since(t)
	return float64(d.Microseconds()) / 1000
}

// timestamp formats t as RFC 3339 with milliseconds, in UTC.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
