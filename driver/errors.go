package driver

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// Error is the one error type drivers return for an action or an
// observation that failed. Code is one of the contract.ToolError codes, so
// that the ToolResult of a failed action carries it unchanged.
//
// Messages never hold text that a type action typed: drivers build them
// from the selector and from what they saw, never from the action's Text.
type Error struct {
	// Code classifies the failure.
	Code contract.ErrorCode
	// Selector is the selector the action addressed; "" when none.
	Selector string
	// Count is how many elements matched, for CodeAmbiguousSelector.
	Count int
	// Msg says what went wrong, in words.
	Msg string
	// Err is the underlying error, if any.
	Err error

	final bool // waiting cannot cure it
}

// The sentinel errors, one per code: errors.Is(err, ErrTimeout) holds for
// any *Error whose Code is contract.CodeTimeout.
var (
	ErrElementNotFound   = &Error{Code: contract.CodeElementNotFound, Msg: "element not found"}
	ErrAmbiguousSelector = &Error{Code: contract.CodeAmbiguousSelector, Msg: "selector matches more than one element"}
	ErrNotInteractable   = &Error{Code: contract.CodeNotInteractable, Msg: "element not visible or not interactable"}
	ErrTimeout           = &Error{Code: contract.CodeTimeout, Msg: "timeout"}
	ErrNavigationBlocked = &Error{Code: contract.CodeNavigationBlocked, Msg: "navigation blocked"}
	ErrPageClosed        = &Error{Code: contract.CodePageClosed, Msg: "page closed"}
	ErrUnsupported       = &Error{Code: contract.CodeUnsupported, Msg: "unsupported"}
	ErrInternal          = &Error{Code: contract.CodeInternal, Msg: "internal driver error"}
	ErrTargetChanged     = &Error{Code: contract.CodeTargetChanged, Msg: "the page's origin or the element changed since it was described"}
)

// MaxErrorMessage bounds the message an Error puts into a ToolResult, in
// characters (the schema allows 4096).
const MaxErrorMessage = 1024

// Error returns the code, the selector, the count and the message.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Selector != "" {
		b.WriteString(" (selector ")
		b.WriteString(quoteBounded(e.Selector, 200))
		b.WriteString(")")
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Count > 0 && e.Code == contract.CodeAmbiguousSelector && !strings.Contains(e.Msg, fmt.Sprint(e.Count)) {
		fmt.Fprintf(&b, " (%d matches)", e.Count)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code and no other
// detail, which is what the sentinels are.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Code == e.Code && t.Selector == "" && t.Err == nil && t.Count == 0
}

// ToolError returns the contract form of the error for a ToolResult, its
// message bounded to MaxErrorMessage characters and never empty.
func (e *Error) ToolError() *contract.ToolError {
	msg := e.Msg
	if e.Selector != "" {
		msg = "selector " + quoteBounded(e.Selector, 200) + ": " + msg
	}
	if e.Count > 0 && e.Code == contract.CodeAmbiguousSelector && !strings.Contains(msg, fmt.Sprint(e.Count)) {
		msg += fmt.Sprintf(" (%d matches)", e.Count)
	}
	if msg == "" {
		msg = string(e.Code)
	}
	return &contract.ToolError{Code: e.Code, Message: text.CutRunes(strings.ToValidUTF8(msg, "\uFFFD"), MaxErrorMessage)}
}

// CodeOf returns the code of the first *Error in err's chain, or
// CodeInternal for any other non-nil error, or "" for nil.
func CodeOf(err error) contract.ErrorCode {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return contract.CodeInternal
}

func newErr(code contract.ErrorCode, sel, msg string, err error) *Error {
	return &Error{Code: code, Selector: sel, Msg: msg, Err: err}
}

func quoteBounded(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		s = text.CutRunes(s, n) + "…"
	}
	return fmt.Sprintf("%q", s)
}
