package contract

// RiskTag is the risk an action carries (seed 000): it decides how the
// gate treats the action.
type RiskTag string

// The risk tags.
const (
	RiskLow    RiskTag = "low"    // observation, low impact
	RiskMedium RiskTag = "medium" // may mutate page state through input
	RiskHigh   RiskTag = "high"   // broad blast radius: needs an explicit permit
)

// ErrorCode classifies why a driver could not carry an action out.
type ErrorCode string

// The driver error codes of ToolError.code.
const (
	CodeElementNotFound   ErrorCode = "element_not_found"  // the selector matched nothing
	CodeAmbiguousSelector ErrorCode = "ambiguous_selector" // the selector matched more than one element
	CodeNotInteractable   ErrorCode = "not_interactable"   // the element is hidden, disabled or covered
	CodeTimeout           ErrorCode = "timeout"            // the action did not complete in time
	CodeNavigationBlocked ErrorCode = "navigation_blocked" // the browser or the driver refused the navigation
	CodePageClosed        ErrorCode = "page_closed"        // the page went away
	CodeUnsupported       ErrorCode = "unsupported"        // the driver cannot do this action
	CodeInternal          ErrorCode = "internal"           // the driver failed
	// CodeTargetChanged: the page or the element changed between the
	// decision and the moment of acting (another origin, another element),
	// so the action was not run. Appended after internal (codes are
	// append-only).
	CodeTargetChanged ErrorCode = "target_changed"
)

// ToolResult is the result of one executed browser action with its
// provenance (schema kind "tool-result", seed 000). Times stay strings
// (RFC 3339) so that a decoded result re-encodes to the same value.
type ToolResult struct {
	// ActionID is the id of the action this is the result of.
	ActionID string `json:"actionId"`
	// Action is the stable policy action name, such as "browser.click"
	// (see Action.PolicyName).
	Action string `json:"action"`
	// RiskTag is the risk tag the gate assigned.
	RiskTag RiskTag `json:"riskTag"`
	// SessionID is the runtime session id.
	SessionID string `json:"sessionId"`
	// OK says whether the driver carried the action out.
	OK bool `json:"ok"`
	// Error says why the action failed; set exactly when OK is false.
	Error *ToolError `json:"error,omitempty"`
	// CaptureLatencyMs is how long the capture after the action took; nil
	// when nothing was captured.
	CaptureLatencyMs *float64 `json:"captureLatencyMs,omitempty"`
	// InputLatencyMs is how long injecting the input took; nil for actions
	// without input.
	InputLatencyMs *float64 `json:"inputLatencyMs,omitempty"`
	// FrameID is the id of the frame the action ran in; "" when unknown.
	FrameID string `json:"frameId,omitempty"`
	// WindowID is the Chrome window id; nil when the driver has none.
	WindowID *int `json:"windowId,omitempty"`
	// TabID is the Chrome tab id; nil when the driver has none.
	TabID *int `json:"tabId,omitempty"`
	// URL is the absolute URL of the page after the action; "" when there
	// is no page any more.
	URL string `json:"url,omitempty"`
	// StartedAt is when the driver started the action (RFC 3339).
	StartedAt string `json:"startedAt"`
	// EndedAt is when the driver finished or gave up (RFC 3339).
	EndedAt string `json:"endedAt"`
	// ArtifactIDs are the ids of the artifacts the action produced; nil
	// when it produced none.
	ArtifactIDs []string `json:"artifactIds,omitempty"`
	// Note says what the driver saw of a successful action that the model
	// should know; "" when there is nothing to say. A click whose press
	// reached the element, after which the page covered or removed it,
	// says that the rest of the click was stopped and where it went.
	Note string `json:"note,omitempty"`
}

// ToolError says why a driver could not carry an action out.
type ToolError struct {
	// Code classifies the failure.
	Code ErrorCode `json:"code"`
	// Message gives the detail; it may quote page-controlled text.
	Message string `json:"message"`
}

// Error returns the code and the message.
func (e *ToolError) Error() string { return string(e.Code) + ": " + e.Message }

// The media types an image artifact may have.
const (
	MIMEPNG  = "image/png"
	MIMEJPEG = "image/jpeg"
	MIMEWebP = "image/webp"
)

// MaxImageBytes is the largest image artifact the schema admits (seed 004's
// default of 5 MiB). A policy may set a lower cap, never a higher one.
const MaxImageBytes = 5 << 20

// ImageArtifact records one image stored in the evidence bundle (schema
// kind "image-artifact", seed 004).
type ImageArtifact struct {
	// ID identifies the artifact within the bundle.
	ID string `json:"id"`
	// URI is the image's path relative to the bundle root, such as
	// "artifacts/ID.png".
	URI string `json:"uri"`
	// MIMEType is MIMEPNG, MIMEJPEG or MIMEWebP.
	MIMEType string `json:"mimeType"`
	// ByteSize is the size of the image file, 1 to MaxImageBytes.
	ByteSize int64 `json:"byteSize"`
	// ContentHash is the SHA-256 of the file, 64 lowercase hex digits.
	ContentHash string `json:"contentHash"`
	// Width is the image width in pixels; 0 when not recorded.
	Width int `json:"width,omitempty"`
	// Height is the image height in pixels; 0 when not recorded.
	Height int `json:"height,omitempty"`
	// SourceURL is the absolute URL of the page the image shows; "" when
	// not recorded.
	SourceURL string `json:"sourceUrl,omitempty"`
	// ActionID is the id of the action that produced the image; "" when
	// not recorded.
	ActionID string `json:"actionId,omitempty"`
}
