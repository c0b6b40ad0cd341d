package driver

import (
	"fmt"
	"sync"

	"github.com/aegis-run/aegis/contract"
)

// artifactLog numbers the artifacts a driver extracts and keeps them twice:
// whole (with image bytes) until the session takes them, and as records
// until the next observation carries them. Both drivers use it, so ids and
// records are the same whichever driver extracted.
type artifactLog struct {
	mu      sync.Mutex
	seq     int
	taken   []Extracted
	pending []contract.Artifact
}

// add names ex after the next id, fills in where it came from (the action
// and the page's URL src, about:blank when there is none), keeps it, and
// returns the id as the action's artifact ids.
func (l *artifactLog) add(ex Extracted, a contract.Action, src string) []string {
	if src == "" {
		src = "about:blank"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	id := fmt.Sprintf("art-%06d", l.seq)
	ex.Artifact.ID = id
	ex.Artifact.SourceSelector = a.Selector
	ex.Artifact.SourceURL = src
	if ex.Image != nil {
		ex.Image.ID = id
		ex.Image.URI = "artifacts/" + id + extFor(ex.Image.MIMEType)
		ex.Image.SourceURL = src
		ex.Image.ActionID = a.ID
		ex.Artifact.Value = ex.Image.URI
	}
	l.taken = append(l.taken, ex)
	l.pending = append(l.pending, ex.Artifact)
	return []string{id}
}

// take returns and forgets the artifacts kept so far.
func (l *artifactLog) take() []Extracted {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.taken
	l.taken = nil
	return out
}

// records returns and forgets the records not yet observed, at most
// MaxArtifactsPerObserve of them (the newest).
func (l *artifactLog) records() []contract.Artifact {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.pending)
	if n == 0 {
		return nil
	}
	keep := l.pending
	if n > MaxArtifactsPerObserve {
		keep = keep[n-MaxArtifactsPerObserve:]
	}
	l.pending = nil
	return append([]contract.Artifact(nil), keep...)
}
