package witness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aegis-run/aegis/evidence"
)

// Witness is where checkpoints go: a log file (file:PATH) or an HTTP
// witness (http:// or https://).
type Witness interface {
	// Add sends a signed checkpoint with a consistency proof from size
	// old (Log.Add says what it checks and the errors).
	Add(ctx context.Context, old uint64, proof []evidence.Hash, note []byte) error
	// Latest returns the latest checkpoint held for origin, its signature
	// verified, or an error wrapping ErrNotFound.
	Latest(ctx context.Context, origin string) (*Signed, error)
	// String names the witness.
	String() string
}

// ErrUnavailable is wrapped by the errors of a witness that could not be
// asked (unreachable, timed out, a store that cannot be read, an answer
// that is not one of the API's).
var ErrUnavailable = errors.New("witness unavailable")

// Open returns the witness a spec names: "file:PATH" (a log file, created
// when missing) or an http:// or https:// URL (the base of the API:
// CheckpointPath is appended to its path).
func Open(spec string) (Witness, error) {
	if path, ok := strings.CutPrefix(spec, "file:"); ok {
		if path == "" {
			return nil, fmt.Errorf("witness %q: file: needs a path", spec)
		}
		return &fileWitness{log: NewLog(FileStore{Path: path}), path: path}, nil
	}
	u, err := url.Parse(spec)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("witness %q: want file:PATH or an http(s)://HOST[:PORT][/PATH] URL", spec)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + CheckpointPath
	return &httpWitness{url: u.String(), client: &http.Client{Timeout: 30 * time.Second, CheckRedirect: noRedirect}}, nil
}

// noRedirect refuses redirects: a witness answers where it was asked.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// fileWitness is a witness kept in a log file by this process.
type fileWitness struct {
	log  *Log
	path string
}

func (f *fileWitness) String() string { return "file:" + f.path }

func (f *fileWitness) Add(ctx context.Context, old uint64, proof []evidence.Hash, note []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	err := f.log.Add(old, proof, note)
	if err != nil && !isRefusal(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

func (f *fileWitness) Latest(ctx context.Context, origin string) (*Signed, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	s, err := f.log.Latest(origin)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return s, err
}

// isRefusal reports whether err is the witness's judgment of a checkpoint
// rather than a failure to reach it.
func isRefusal(err error) bool {
	var c *ConflictError
	return errors.As(err, &c) || errors.Is(err, ErrMalformed) || errors.Is(err, ErrSignature) || errors.Is(err, ErrInconsistent) || errors.Is(err, ErrFull)
}

// httpWitness is a witness served over HTTP.
type httpWitness struct {
	url    string
	client *http.Client
}

func (h *httpWitness) String() string { return h.url }

// maxAnswerBytes bounds an answer read from a witness.
const maxAnswerBytes = MaxNoteBytes + 1

func (h *httpWitness) do(ctx context.Context, method, target string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: reading the answer: %w", ErrUnavailable, err)
	}
	return resp.StatusCode, b, nil
}

func (h *httpWitness) Add(ctx context.Context, old uint64, proof []evidence.Hash, note []byte) error {
	code, b, err := h.do(ctx, http.MethodPost, h.url, EncodeAdd(old, proof, note))
	if err != nil {
		return err
	}
	why := trim(strings.TrimSpace(string(b)))
	switch code {
	case http.StatusOK:
		return nil
	case http.StatusConflict:
		n, err := strconv.ParseUint(strings.TrimSuffix(string(b), "\n"), 10, 63)
		if err != nil {
			return fmt.Errorf("%w: a 409 answer without a size", ErrUnavailable)
		}
		return &ConflictError{Size: n}
	case http.StatusBadRequest:
		return fmt.Errorf("%w (the witness says: %s)", ErrMalformed, why)
	case http.StatusForbidden:
		return fmt.Errorf("%w (the witness says: %s)", ErrSignature, why)
	case http.StatusUnprocessableEntity:
		return fmt.Errorf("%w (the witness says: %s)", ErrInconsistent, why)
	case http.StatusInsufficientStorage:
		return fmt.Errorf("%w (the witness says: %s)", ErrFull, why)
	}
	return fmt.Errorf("%w: HTTP %d: %s", ErrUnavailable, code, why)
}

func (h *httpWitness) Latest(ctx context.Context, origin string) (*Signed, error) {
	code, b, err := h.do(ctx, http.MethodGet, h.url+"?origin="+url.QueryEscape(origin), nil)
	if err != nil {
		return nil, err
	}
	switch code {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, ErrNotFound
	default:
		return nil, fmt.Errorf("%w: HTTP %d: %s", ErrUnavailable, code, trim(strings.TrimSpace(string(b))))
	}
	s, err := OpenNote(b)
	if err != nil {
		return nil, fmt.Errorf("the witness's checkpoint: %w", err)
	}
	if s.Origin != origin {
		return nil, fmt.Errorf("%w: the witness answered with the checkpoint of %s", ErrMalformed, trim(s.Origin))
	}
	return s, nil
}
