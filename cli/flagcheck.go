package cli

import (
	"net"
	"os"
	"strings"
)

// checkSessionFlags refuses the session flags of run and demo whose values
// cannot work, saying so for the flag as it was typed, with the fix,
// before anything starts (a URL echoed with its password and query values
// masked: shownURL): a later layer would say it in its own words
// ("llm: base URL ... is not an http(s) URL"), or not at all (a timeout
// of 0 silently became the default).
func checkSessionFlags(o *runOptions) error {
	if o.approvalWait <= 0 {
		return usageError("--approval-timeout %v: want a positive duration, such as 5m (the default)", o.approvalWait)
	}
	if o.endpoint != "" && !hasScheme(o.endpoint, "ws", "wss", "http", "https") {
		shown := shownURL(o.endpoint)
		return usageError("--browser-endpoint %s: want the Playwright server's WebSocket address: add ws:// (--browser-endpoint ws://%s)", shown, strings.TrimPrefix(shown, "//"))
	}
	base, from := o.baseURL, "--llm-base-url "
	if base == "" {
		base, from = os.Getenv(EnvLLMBaseURL), "$"+EnvLLMBaseURL+"="
	}
	switch {
	case base == "" || hasScheme(base, "http", "https"):
	case noScheme(base):
		return usageError("%s%s: the URL needs a scheme: add %s (%s%s)", from, shownURL(base), schemeFor(base), from, withScheme(shownURL(base)))
	default:
		return usageError("%s%s: want the endpoint's http(s) URL up to /v1, such as https://api.openai.com/v1", from, shownURL(base))
	}
	return nil
}

// schemeFor is the scheme a URL written without one likely lacks: http://
// for this machine (a local model server, a test site), else https://.
func schemeFor(u string) string {
	host := strings.TrimPrefix(u, "//")
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if ip := net.ParseIP(host); strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") || ip != nil && ip.IsLoopback() {
		return "http://"
	}
	return "https://"
}

// withScheme is u with the scheme schemeFor gives it.
func withScheme(u string) string { return schemeFor(u) + strings.TrimPrefix(u, "//") }

// hasScheme reports whether u starts with one of the schemes and "://".
func hasScheme(u string, schemes ...string) bool {
	for _, s := range schemes {
		if len(u) > len(s)+3 && strings.EqualFold(u[:len(s)+3], s+"://") {
			return true
		}
	}
	return false
}
