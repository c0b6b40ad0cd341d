package llm

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinels matched (errors.Is) by an *APIError of the kind.
var (
	// ErrTimeout: every attempt timed out (Config.Timeout).
	ErrTimeout = errors.New("llm: model call timed out")
	// ErrRateLimited: the endpoint answered 429.
	ErrRateLimited = errors.New("llm: rate limited (HTTP 429)")
	// ErrServer: the endpoint answered 5xx.
	ErrServer = errors.New("llm: server error (HTTP 5xx)")
	// ErrNetwork: the endpoint could not be reached.
	ErrNetwork = errors.New("llm: network error")
)

// Codes of an *APIError that did not come from the endpoint.
const (
	CodeTimeout = "timeout" // the attempt timed out
	CodeNetwork = "network" // the request did not reach the endpoint or its answer was cut
)

// APIError is a failed model call: the endpoint's error answer (Status is
// the HTTP status), or, with Status 0, a timeout or network error (Code
// CodeTimeout or CodeNetwork). It wraps go-openai's error (an
// *openai.APIError, *openai.RequestError or a transport error), with the
// API key, should the endpoint echo it, replaced by "[redacted]".
type APIError struct {
	// Status is the HTTP status; 0 when no answer came.
	Status int
	// Code is the endpoint's error code ("rate_limit_exceeded",
	// "invalid_api_key"...), or CodeTimeout or CodeNetwork.
	Code string
	// Type is the endpoint's error type, when it gave one.
	Type string
	// Message is the endpoint's error message, bounded to 1000 bytes.
	Message string
	// Attempts is the number of HTTP requests made.
	Attempts int
	// RetryAfter is the last Retry-After the endpoint sent (0 if none).
	RetryAfter time.Duration
	// Err is the underlying error.
	Err error
}

// Error says what failed, with the status, code, message and attempts; never the API key.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("llm: chat completion failed")
	switch {
	case e.Status != 0:
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	case e.Code == CodeTimeout:
		b.WriteString(": timed out")
	case e.Code == CodeNetwork:
		b.WriteString(": network error")
	}
	if e.Code != "" && e.Code != CodeTimeout && e.Code != CodeNetwork {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	fmt.Fprintf(&b, " [%d attempt", e.Attempts)
	if e.Attempts != 1 {
		b.WriteByte('s')
	}
	b.WriteByte(']')
	return b.String()
}

// Unwrap returns the underlying error.
func (e *APIError) Unwrap() error { return e.Err }

// Is matches ErrTimeout, ErrRateLimited, ErrServer and ErrNetwork.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrTimeout:
		return e.Code == CodeTimeout
	case ErrNetwork:
		return e.Code == CodeNetwork
	case ErrRateLimited:
		return e.Status == 429
	case ErrServer:
		return e.Status >= 500 && e.Status <= 599
	}
	return false
}

// Retryable reports whether a call that failed like this may succeed if
// tried again: timeouts, network errors, 408, 409, 429 and 5xx.
func (e *APIError) Retryable() bool {
	switch {
	case e.Status == 0:
		return e.Code == CodeTimeout || e.Code == CodeNetwork
	case e.Status == 408, e.Status == 409, e.Status == 429:
		return true
	case e.Status >= 500 && e.Status <= 599:
		return true
	}
	return false
}

// GuardError is a request that Config.Guard refused: it was never sent.
type GuardError struct {
	// Err is the guard's error.
	Err error
}

// Error says the request was refused and why.
func (e *GuardError) Error() string { return "llm: request refused before sending: " + e.Err.Error() }

// Unwrap returns the guard's error.
func (e *GuardError) Unwrap() error { return e.Err }
