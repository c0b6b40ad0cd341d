package contract

// EffectKind says what kind of browser traffic an Effect is.
type EffectKind string

// The effect kinds.
const (
	// EffectNavigation is a navigation of the top-level page (a followed
	// link, a form submission, location=, window.open, a meta refresh, a
	// redirect).
	EffectNavigation EffectKind = "navigation"
	// EffectFrame is a navigation of a frame inside the page.
	EffectFrame EffectKind = "frame"
	// EffectRequest is any other request of the page: fetch, XHR, a
	// beacon, an image, a script, a WebSocket.
	EffectRequest EffectKind = "request"
	// EffectDownload is a download.
	EffectDownload EffectKind = "download"
	// EffectPeer is a peer-to-peer channel (WebRTC) the page tried to open.
	EffectPeer EffectKind = "peer"
)

// Maxima of an Effect's strings, in characters (runes).
const (
	MaxEffectMethod       = 16
	MaxEffectOrigin       = 512
	MaxEffectPath         = 2048
	MaxEffectField        = 256 // one field name
	MaxEffectFields       = 64  // names kept; later ones are dropped
	MaxEffectResourceType = 32
	MaxEffectReason       = 1024
)

// Effect is what an action caused in the browser, as the browser reported
// it: a navigation or request the page made, whatever made it (the click,
// a script, a timer). The page and the model choose none of these facts
// directly; the gate judges effects, not the words that led to them.
// Values are never recorded: no query string, no body, only the names of
// the form fields (or top-level JSON keys) a state-changing request sends.
type Effect struct {
	// Kind is navigation, frame, request, download or peer.
	Kind EffectKind `json:"kind"`
	// Method is the request method in upper case ("GET", "POST"); "" for
	// a peer channel.
	Method string `json:"method,omitempty"`
	// Origin is the origin the request goes to ("https://shop.example",
	// scheme://host[:port] lowercased, default port dropped); "" when the
	// URL has none (a peer channel names no origin).
	Origin string `json:"origin,omitempty"`
	// Path is the URL's path, without query or fragment; "" when none.
	Path string `json:"path,omitempty"`
	// Fields are the names of the form fields (application/x-www-form-
	// urlencoded, multipart/form-data) or top-level JSON object keys of the
	// request's body, sorted, deduplicated, at most MaxEffectFields; never
	// their values.
	Fields []string `json:"fields,omitempty"`
	// ResourceType is the browser's resource type ("document", "fetch",
	// "xhr", "ping", "websocket", "image"...); "" when unknown.
	ResourceType string `json:"resourceType,omitempty"`
	// Refused says why the driver's boundary refused the effect before any
	// policy saw it (an origin outside the allowlist, a download, a peer
	// channel); "" for an effect the policy judged.
	Refused string `json:"refused,omitempty"`
}

// ChangesState reports whether the effect's method may change state on
// the server: anything but GET, HEAD and OPTIONS.
func (e Effect) ChangesState() bool {
	switch e.Method {
	case "GET", "HEAD", "OPTIONS", "":
		return e.Kind == EffectPeer
	}
	return true
}
