package witness

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Server serves a Log over HTTP (FORMAT.md, section 14):
//
//	POST /checkpoint              body: EncodeAdd; 200 accepted, 409 with
//	                              the size held, 400, 403, 422, 507 refused
//	GET  /checkpoint?origin=ORIGIN  200 the latest signed note, 404 none
//
// Every answer is text/plain; a refusal's body is one line saying why.
type Server struct{ Log *Log }

// CheckpointPath is the path of the witness API.
const CheckpointPath = "/checkpoint"

// ServeHTTP answers one request.
func (s Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Path != CheckpointPath {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.latest(w, r)
	case http.MethodPost:
		s.add(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s Server) latest(w http.ResponseWriter, r *http.Request) {
	origin := r.URL.Query().Get("origin")
	sig, err := s.Log.Latest(origin)
	switch {
	case errors.Is(err, ErrNotFound):
		http.Error(w, "no checkpoint for this origin", http.StatusNotFound)
	case err != nil:
		http.Error(w, "store: "+oneLine(err), http.StatusInternalServerError)
	default:
		_, _ = w.Write(sig.Note)
	}
}

func (s Server) add(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	if err != nil {
		http.Error(w, "reading the request: "+oneLine(err), http.StatusBadRequest)
		return
	}
	old, proof, note, err := ParseAdd(body)
	if err == nil {
		err = s.Log.Add(old, proof, note)
	}
	var conflict *ConflictError
	switch {
	case err == nil:
		_, _ = io.WriteString(w, "ok\n")
	case errors.As(err, &conflict):
		w.WriteHeader(http.StatusConflict)
		_, _ = fmt.Fprintf(w, "%d\n", conflict.Size)
	case errors.Is(err, ErrMalformed):
		http.Error(w, oneLine(err), http.StatusBadRequest)
	case errors.Is(err, ErrSignature):
		http.Error(w, oneLine(err), http.StatusForbidden)
	case errors.Is(err, ErrInconsistent):
		http.Error(w, oneLine(err), http.StatusUnprocessableEntity)
	case errors.Is(err, ErrFull):
		http.Error(w, oneLine(err), http.StatusInsufficientStorage)
	default:
		http.Error(w, oneLine(err), http.StatusInternalServerError)
	}
}

// oneLine returns an error's message on one line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}
