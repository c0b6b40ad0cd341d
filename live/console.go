package live

import (
	"embed"
	"net/http"
	"path"

	"github.com/aegis-run/aegis/palette"
)

//go:embed console/index.html console/console.js console/console.css
var consoleFiles embed.FS

// consoleCSP allows the console's own script, styles, API and WebSocket,
// and screenshots as blobs; nothing else, and no framing.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

var consoleTypes = map[string]string{
	"index.html":     "text/html; charset=utf-8",
	"console.js":     "text/javascript; charset=utf-8",
	"console.css":    "text/css; charset=utf-8",
	palette.FileName: "text/css; charset=utf-8",
}

// serveConsole serves the console's page and assets, and the palette
// every surface shares (package palette). They hold nothing secret: the
// page asks for the token in its URL's fragment.
func (s *Server) serveConsole(w http.ResponseWriter, r *http.Request) {
	name := path.Base(r.URL.Path)
	if r.URL.Path == "/" {
		name = "index.html"
	}
	var b []byte
	if name == palette.FileName {
		b = []byte(palette.CSS)
	} else {
		var err error
		if b, err = consoleFiles.ReadFile("console/" + name); err != nil {
			httpError(w, http.StatusNotFound, "not_found", "not found")
			return
		}
	}
	w.Header().Set("Content-Type", consoleTypes[name])
	w.Header().Set("Content-Security-Policy", consoleCSP)
	w.Header().Set("X-Frame-Options", "DENY")
	_, _ = w.Write(b)
}
