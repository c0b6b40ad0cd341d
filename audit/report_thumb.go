package audit

import thumbs "github.com/aegis-run/aegis/internal/thumb"

// The box a timeline thumbnail fits in, in pixels (images thumbs.Check
// refuses get no thumbnail).
const (
	thumbMaxWidth  = 320
	thumbMaxHeight = 200
)

// thumb is a scaled-down screenshot.
type thumb struct {
	data          []byte
	mime          string
	width, height int
}

// thumbnail scales a PNG or JPEG screenshot down to fit in the thumbnail
// box (never up), as a JPEG (package internal/thumb); ok is false for an
// image it cannot decode or that is too large to decode.
func thumbnail(data []byte) (thumb, bool) {
	t, ok := thumbs.Make(data, thumbMaxWidth, thumbMaxHeight, 82)
	if !ok {
		return thumb{}, false
	}
	return thumb{data: t.Data, mime: "image/jpeg", width: t.Width, height: t.Height}, true
}
