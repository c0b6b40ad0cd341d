// Package policy embeds the default aegis policy bundle: the Rego policy that
// gates every browser action (browser.rego, package aegis.browser), its
// data (data.json: every list and threshold, under data.aegis.config), and
// its Rego unit tests (*_test.rego). The bundle is laid out as OPA expects,
// so "opa test ." and "opa eval -d ." work in this directory, and a copy of
// it is the starting point of a --policy DIR. README.md documents the input
// document, the data, the rules and the decision.
package policy

import (
	"embed"
	"io/fs"
)

//go:embed *.rego data.json
var files embed.FS

// FS returns the embedded bundle: *.rego (tests included) and data.json at
// its root.
func FS() fs.FS { return files }
