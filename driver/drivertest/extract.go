// The tests of extract actions: text, tables, links, screenshots.

package drivertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/schemas"
)

func testExtractText(t *testing.T, e *env) {
	e.do(t, e.navigate("/orders"))
	res := e.do(t, e.extract(contract.ExtractText, ""))
	a := takeOne(t, e, res)
	if !strings.Contains(a.Artifact.Value, "Your orders") || !strings.Contains(a.Artifact.Value, "A-1003") {
		t.Errorf("page text = %q", a.Artifact.Value)
	}
	res = e.do(t, e.extract(contract.ExtractText, "h1"))
	if a := takeOne(t, e, res); a.Artifact.Value != "Your orders" || a.Artifact.SourceSelector != "h1" {
		t.Errorf("text of h1 = %+v", a.Artifact)
	}
	// The next observation carries the two records, the one after none.
	obs := e.observe(t, driver.ObserveOptions{})
	if len(obs.ExtractedArtifacts) != 2 {
		t.Errorf("observation carries %d artifact records, want 2", len(obs.ExtractedArtifacts))
	}
	if obs = e.observe(t, driver.ObserveOptions{}); len(obs.ExtractedArtifacts) != 0 {
		t.Errorf("second observation carries %d artifact records, want 0", len(obs.ExtractedArtifacts))
	}
}

func testExtractTable(t *testing.T, e *env) {
	e.do(t, e.navigate("/orders"))
	for _, sel := range []string{"", "#orders"} {
		res := e.do(t, e.extract(contract.ExtractTable, sel))
		a := takeOne(t, e, res)
		var rows [][]string
		if err := json.Unmarshal([]byte(a.Artifact.Value), &rows); err != nil {
			t.Fatalf("table value is not rows: %v: %s", err, a.Artifact.Value)
		}
		if len(rows) != 6 {
			t.Fatalf("table has %d rows, want 6: %v", len(rows), rows)
		}
		if got, want := strings.Join(rows[0], "|"), "Order|Date|Status|Total"; got != want {
			t.Errorf("header = %q, want %q", got, want)
		}
		if got, want := strings.Join(rows[3], "|"), "A-1003|2026-01-19|Shipped|€99.90"; got != want {
			t.Errorf("row 3 = %q, want %q", got, want)
		}
	}
	e.fail(t, ctxT(t, 10*time.Second), e.extract(contract.ExtractTable, "h1"), contract.CodeElementNotFound)
}

func testExtractLinks(t *testing.T, e *env) {
	e.do(t, e.navigate("/external"))
	res := e.do(t, e.extract(contract.ExtractLink, "main"))
	a := takeOne(t, e, res)
	var links []struct{ Text, Href string }
	if err := json.Unmarshal([]byte(a.Artifact.Value), &links); err != nil {
		t.Fatalf("links value: %v: %s", err, a.Artifact.Value)
	}
	want := map[string]string{
		demosite.ExternalOrigin + "/": "Visit our partner",
		e.site + "/go-external":       "Partner offers (redirect)",
		e.site + "/download":          "Download invoice",
	}
	got := map[string]string{}
	for _, l := range links {
		got[l.Href] = l.Text
	}
	for href, text := range want {
		if got[href] != text {
			t.Errorf("link %s: text %q, want %q (all: %v)", href, got[href], text, links)
		}
	}
}

func testScreenshot(t *testing.T, e *env) {
	e.do(t, e.navigate("/orders"))
	for _, sel := range []string{"", "#orders"} {
		res := e.do(t, e.extract(contract.ExtractScreenshot, sel))
		a := takeOne(t, e, res)
		if a.Image == nil || len(a.Data) == 0 {
			t.Fatalf("screenshot without image: %+v", a)
		}
		if _, err := contract.Encode(schemas.KindImageArtifact, a.Image); err != nil {
			t.Fatalf("image artifact breaks its schema: %v", err)
		}
		if !bytes.HasPrefix(a.Data, []byte("\x89PNG\r\n\x1a\n")) || a.Image.MIMEType != contract.MIMEPNG {
			t.Errorf("screenshot is not a PNG")
		}
		sum := sha256.Sum256(a.Data)
		if a.Image.ContentHash != hex.EncodeToString(sum[:]) || a.Artifact.Hash != a.Image.ContentHash || int(a.Image.ByteSize) != len(a.Data) {
			t.Errorf("image record does not match its bytes: %+v", a.Image)
		}
		if a.Artifact.Value != a.Image.URI || a.Image.ActionID != res.ActionID {
			t.Errorf("artifact %+v / image %+v", a.Artifact, a.Image)
		}
		if sel == "" && (a.Image.Width < 100 || a.Image.Height < 100) {
			t.Errorf("page screenshot is %dx%d", a.Image.Width, a.Image.Height)
		}
		if sel != "" && (a.Image.Width < 200 || a.Image.Height < 50 || a.Image.Height > 400) {
			t.Errorf("table screenshot is %dx%d", a.Image.Width, a.Image.Height)
		}
	}
}
