package driver

import "github.com/aegis-run/aegis/canonjson"

// canonicalSnapshot returns the canonical form (RFC 8785) of a snapshot:
// exactly what canonjson.TransformDepth returns at snapshotMaxDepth,
// errors included. The observer writes its snapshot canonical already
// (members in UTF-16 order, JSON.stringify's escapes, which are RFC 8785's,
// small integers), so the common case is canonjson.Check confirming it in
// one pass that builds nothing; anything else is transformed.
func canonicalSnapshot(doc []byte) ([]byte, error) {
	if canonjson.Check(doc, snapshotMaxDepth) == nil {
		return doc, nil
	}
	return canonjson.TransformDepth(doc, snapshotMaxDepth)
}

// snapshotMaxDepth bounds the JSON nesting of a snapshot: the observer
// walks at most MaxMaxDepth elements deep and nests an element two levels
// below its parent (its node and its children), with a few levels for the
// document, shadow roots and frames. Anything deeper is refused.
const snapshotMaxDepth = 2*MaxMaxDepth + 16
