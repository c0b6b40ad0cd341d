// Package palette provides the one colour palette of every surface a
// person sees: the extension's pages, the live console and the HTML report
// include CSS (palette.css) and use its variables and classes, so a risk
// level or a decision has the same colour, meeting WCAG AA contrast, in
// the light and the dark scheme alike.
package palette

import _ "embed"

// CSS is palette.css: the scheme's colour variables (--ae-*) for light and
// dark, and the classes risk-low, risk-medium, risk-high, result-allowed,
// result-approved, result-denied, result-paused, ae-muted, btn-primary and
// btn-danger.
//
//go:embed palette.css
var CSS string

// FileName is the name surfaces serve or ship the palette under.
const FileName = "palette.css"
