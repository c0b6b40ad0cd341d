package contract

import (
	"fmt"
	"unicode/utf8"
)

// Bounds on the fields of an Element, in characters (runes). The page is
// hostile and controls every one of these strings, so the driver truncates
// them before it hands the element to the gate, and the gate denies an
// element that breaks a bound rather than judge part of it.
const (
	MaxElementTag          = 64   // tag names are short (the longest HTML tag is 10)
	MaxElementType         = 64   // input types are short ("datetime-local" is 14)
	MaxElementName         = 256  // name attribute
	MaxElementID           = 256  // id attribute
	MaxElementAutocomplete = 256  // autocomplete holds a few space-separated tokens
	MaxElementRole         = 64   // ARIA roles are short
	MaxElementLabel        = 1024 // accessible name: label, aria-label, placeholder, title
	MaxElementText         = 1024 // visible text, truncated by the driver
	// MaxElementSensitiveSelector bounds SensitiveSelector: a sensitive
	// selector is at most as long as any selector (the schema's 2048).
	MaxElementSensitiveSelector = 2048
	// MaxElementOrigin bounds Origin, an origin the browser reports.
	MaxElementOrigin = 512
)

// Element is the target of an action as the driver resolved it on the page:
// the element the selector the model wrote actually addresses. The gate
// judges sensitivity on it alone (typing into an <input type=password> is
// sensitive whatever the model called it, and a search box is not
// sensitive whatever the selector says), and risk on it beside the
// selector string.
//
// Every field but SensitiveSelector is page-controlled and may be empty.
// The driver lowercases nothing: the gate normalizes. Fields are bounded
// by the Max* constants.
type Element struct {
	// Tag is the element's tag name, such as "input" or "button".
	Tag string `json:"tag"`
	// Type is the current type of an input or button as the browser
	// holds it (the type property: "password", "submit", "text" for an
	// input without a valid type attribute); "" for other elements.
	Type string `json:"type,omitempty"`
	// Name is the name attribute; "" when absent.
	Name string `json:"name,omitempty"`
	// ID is the id attribute; "" when absent.
	ID string `json:"id,omitempty"`
	// Autocomplete is the autocomplete attribute as written, such as
	// "cc-number" or "section-1 shipping one-time-code"; "" when absent.
	Autocomplete string `json:"autocomplete,omitempty"`
	// Role is the element's ARIA role, explicit or implicit; "" when unknown.
	Role string `json:"role,omitempty"`
	// Label is the element's accessible name (its label, aria-label,
	// placeholder or title); "" when it has none.
	Label string `json:"label,omitempty"`
	// Text is the element's visible text, truncated to MaxElementText; ""
	// for elements without text (inputs).
	Text string `json:"text,omitempty"`
	// SensitiveSelector is the first of the session's sensitive selectors
	// (the driver's Config.SensitiveSelectors, the ones it masks) that the
	// element matches, as the browser's Element.matches judged it; "" when
	// it matches none.
	SensitiveSelector string `json:"sensitiveSelector,omitempty"`
	// Origin is the origin of the document (top page or frame) the element
	// is in, as the browser reports it at Describe time; the driver
	// re-checks it, and the element, at the moment of acting. "" when the
	// driver does not know it (bundles written before it was recorded).
	Origin string `json:"origin,omitempty"`
}

// Validate reports the first field of e that is not valid UTF-8 or breaks
// its bound.
func (e Element) Validate() error {
	for _, f := range []struct {
		name  string
		value string
		max   int
	}{
		{"tag", e.Tag, MaxElementTag},
		{"type", e.Type, MaxElementType},
		{"name", e.Name, MaxElementName},
		{"id", e.ID, MaxElementID},
		{"autocomplete", e.Autocomplete, MaxElementAutocomplete},
		{"role", e.Role, MaxElementRole},
		{"label", e.Label, MaxElementLabel},
		{"text", e.Text, MaxElementText},
		{"sensitiveSelector", e.SensitiveSelector, MaxElementSensitiveSelector},
		{"origin", e.Origin, MaxElementOrigin},
	} {
		if !utf8.ValidString(f.value) {
			return fmt.Errorf("contract: element %s is not valid UTF-8", f.name)
		}
		if n := utf8.RuneCountInString(f.value); n > f.max {
			return fmt.Errorf("contract: element %s has %d characters, more than %d", f.name, n, f.max)
		}
	}
	return nil
}
