package nativehost

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/thumb"
	"github.com/aegis-run/aegis/session"
)

// A session's events on their way to the extension, with a thumbnail of
// every screenshot the evidence holds (session.thumbnail).

// MaxForwardWait bounds how long the end of a session waits for its
// events and thumbnails to be sent before it sends session.ended: long
// enough for a loaded machine to decode the screenshots still waiting
// (they are made while the session runs), short enough that an abort
// ends in the popup soon.
const MaxForwardWait = 20 * time.Second

// maxPendingThumbnails bounds the screenshots waiting for their
// thumbnail; past it, a screenshot gets none (the popup keeps only the
// last 40).
const maxPendingThumbnails = 64

// forward sends the events of sub to the extension as they come, and a
// thumbnail of each screenshot, made on a goroutine of its own so that
// decoding never holds the events back. The channel returned is closed
// when sub's events have ended and everything is sent: every event, and
// every thumbnail made and sent.
func forward(sub *session.Subscription, conn *Conn, dir string, logf func(string, ...any)) <-chan struct{} {
	shots := make(chan string, maxPendingThumbnails)
	thumbsDone := make(chan struct{})
	go func() {
		defer close(thumbsDone)
		for uri := range shots {
			th, err := thumbnail(dir, uri)
			if err == nil {
				err = conn.Notify(EventThumbnail, th)
			}
			if err != nil && !errors.Is(err, ErrDisconnected) {
				logf("thumbnail not sent: %v", err)
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range sub.Events() {
			if err := conn.Notify(EventSession, ev); err != nil && !errors.Is(err, ErrDisconnected) {
				logf("event not sent: %v", err)
			}
			if ev.Type == contract.EventScreenshot && ev.URL != nil {
				select {
				case shots <- *ev.URL:
				default:
					logf("no thumbnail of %s: %d screenshots wait for theirs", bound(*ev.URL, 100), maxPendingThumbnails)
				}
			}
		}
		close(shots)
		<-thumbsDone
	}()
	return done
}

// shotURI is the path of a screenshot in a bundle.
var shotURI = regexp.MustCompile(`^artifacts/[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.(png|jpg|jpeg)$`)

// thumbnail reads the screenshot uri of the bundle dir and returns its
// thumbnail event: the image scaled to at most ThumbnailWidth wide, as a
// JPEG (package internal/thumb, the report's too), with the action that
// took it (from its image record).
func thumbnail(dir, uri string) (ThumbnailEvent, error) {
	if !shotURI.MatchString(uri) {
		return ThumbnailEvent{}, fmt.Errorf("not a screenshot of the bundle: %q", bound(uri, 100))
	}
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(uri)))
	if err != nil {
		return ThumbnailEvent{}, err
	}
	if _, err := thumb.Check(b); err != nil {
		return ThumbnailEvent{}, fmt.Errorf("%s: %w", uri, err)
	}
	small, ok := thumb.Make(b, ThumbnailWidth, MaxThumbnailHeight, 70)
	if !ok {
		return ThumbnailEvent{}, fmt.Errorf("%s: the picture does not decode", uri)
	}
	if len(small.Data) > MaxThumbnailBytes {
		return ThumbnailEvent{}, fmt.Errorf("the thumbnail of %s is %d bytes", uri, len(small.Data))
	}
	ev := ThumbnailEvent{URI: uri, Mime: "image/jpeg", Data: base64.StdEncoding.EncodeToString(small.Data), Width: small.Width, Height: small.Height}
	var rec contract.ImageArtifact
	recPath := strings.TrimSuffix(uri, filepath.Ext(uri)) + ".json"
	if rb, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(recPath))); err == nil && json.Unmarshal(rb, &rec) == nil {
		ev.ActionID = bound(rec.ActionID, 128)
	}
	return ev, nil
}
