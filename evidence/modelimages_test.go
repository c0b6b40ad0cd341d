package evidence

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
)

// Rule 17 (FORMAT.md, section 8): every image a model call names is an
// image of the bundle, recorded before the call, of the hash it names.

// shownCall is the record of a model call that showed the model images.
func shownCall(images ...contract.ModelImage) contract.ModelCall {
	mc := modelCall(1, contract.ModelPurposeNavigate)
	mc.Images = images
	return mc
}

// shotImage is the screenshot of the vision escalation imageBundle
// records (artifacts/vision-1.png), as a model call names it.
func shotImage() contract.ModelImage {
	return contract.ModelImage{URI: "artifacts/vision-1.png", SHA256: Hash(sha256.Sum256(examplePNG())).String()}
}

// evidenceOnly is the fixture's own screenshot (artifacts/shot-1.png, of
// a navigate action: evidence only), as a model call would name it.
func evidenceOnly() contract.ModelImage {
	return contract.ModelImage{URI: "artifacts/shot-1.png", SHA256: shotImage().SHA256}
}

// visionStep records an allowed vision escalation (v1, an extract
// screenshot with vision true) and its screenshot, vision-1.
func visionStep(t *testing.T, w *Writer) {
	t.Helper()
	v := contract.Action{ID: "v1", Type: contract.ActExtract, Reason: "look", PolicyTags: []string{}, Extract: contract.ExtractScreenshot, Vision: true}
	for _, err := range []error{
		w.Decision(decision("vision", v, contract.ResultAllowed)),
		w.Action(v, result(v, true)),
		w.Event(actionEvent(v, "took a screenshot for the model", "2026-01-23T10:15:00Z")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Image("vision-1", examplePNG(), ImageMeta{SourceURL: "https://example.com/pricing", ActionID: "v1"}); err != nil {
		t.Fatal(err)
	}
}

// imageBundle writes the fixture's session and a vision escalation, then
// a model call that showed the model its screenshot, and seals it.
func imageBundle(t *testing.T) map[string][]byte {
	t.Helper()
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), ApprovalKey: testApprovalKey()})
	if err != nil {
		t.Fatal(err)
	}
	writeSession(t, w, fixture{})
	visionStep(t, w)
	if err := w.ModelCall(shownCall(shotImage())); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 16, 10, 0, time.UTC), NewEd25519Signer(testKey())); err != nil {
		t.Fatal(err)
	}
	_, files := bundleFiles(t, w.Dir())
	return files
}

// TestModelImagesVerified: a model call that names the stored screenshot
// by its hash is written, and the bundle verifies.
func TestModelImagesVerified(t *testing.T) {
	files := imageBundle(t)
	r, err := VerifyFS(context.Background(), forge(t, files).files(), VerifyOptions{PubKey: testPub()})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Counts.ModelCalls, 3; got != want {
		t.Errorf("%d model calls, want %d", got, want)
	}
}

// TestModelImagesRefused: a bundle whose model call names an image that is
// absent, has another hash, is recorded after the call, or is an
// evidence-only screenshot (its action no vision escalation), is refused
// at the model call, citing rule 17.
func TestModelImagesRefused(t *testing.T) {
	files := imageBundle(t)
	const calls = 3 // the shown call is the last line of model-calls.jsonl
	setImage := func(f *forgery, key, value string) {
		f.edit(f.find(FileModelCalls, calls), func(m map[string]any) {
			m["images"].([]any)[0].(map[string]any)[key] = value
		})
	}
	for _, tt := range []struct {
		name   string
		change func(f *forgery)
		says   string
	}{
		{"absent", func(f *forgery) { setImage(f, "uri", "artifacts/shot-9.png") }, `images[0] names "artifacts/shot-9.png", which is not an image of the bundle`},
		{"not an image", func(f *forgery) { setImage(f, "uri", "artifacts/art-1.json") }, `images[0] names "artifacts/art-1.json"`},
		{"another hash", func(f *forgery) { setImage(f, "sha256", hex64("other pixels")) }, "images[0] (artifacts/vision-1.png) has sha256 " + hex64("other pixels") + ", but that image's contentHash is " + shotImage().SHA256},
		{"recorded after the call", func(f *forgery) {
			i := f.find(FileModelCalls, calls)
			call := f.entries[i]
			f.remove(i)
			f.insert(f.find("artifacts/vision-1.png", 0), call)
		}, `images[0] names "artifacts/vision-1.png", which is not an image of the bundle recorded`},
		{"evidence-only screenshot", func(f *forgery) { setImage(f, "uri", evidenceOnly().URI) }, "images[0] (artifacts/shot-1.png) was not produced by an allowed vision escalation"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := forge(t, files)
			tt.change(f)
			_, err := VerifyFS(context.Background(), f.files(), VerifyOptions{PubKey: testPub()})
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a *VerifyError", err)
			}
			if got, want := ve.Check, "model images"; got != want {
				t.Errorf("check %q (%v), want %q", got, err, want)
			}
			if got, want := ve.RuleRef(), "section 8, rule 17"; got != want {
				t.Errorf("rule %q, want %q", got, want)
			}
			if ve.File != FileModelCalls || ve.Line != calls {
				t.Errorf("found at %s line %d, want %s line %d", ve.File, ve.Line, FileModelCalls, calls)
			}
			if !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), "FORMAT.md section 8, rule 17") {
				t.Errorf("%q does not say %q and cite the rule", err, tt.says)
			}
		})
	}
}

// TestWriterRefusesUnshownImages: the writer applies rule 17 before it
// writes: a model call naming an image not stored, of another hash, or
// an evidence-only screenshot, is refused, nothing is written, and the
// writer goes on.
func TestWriterRefusesUnshownImages(t *testing.T) {
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ModelCall(shownCall(shotImage())); err == nil || !strings.Contains(err.Error(), "rule 17") {
		t.Errorf("an image not stored yet: got %v, want a refusal citing rule 17", err)
	}
	if _, err := w.Image("shot-1", examplePNG(), ImageMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := w.ModelCall(shownCall(evidenceOnly())); err == nil || !strings.Contains(err.Error(), "not produced by an allowed vision escalation") {
		t.Errorf("an evidence-only screenshot: got %v, want a refusal", err)
	}
	visionStep(t, w)
	other := shotImage()
	other.SHA256 = hex64("other pixels")
	if err := w.ModelCall(shownCall(other)); err == nil || !strings.Contains(err.Error(), "but that image's contentHash is") {
		t.Errorf("another hash: got %v, want a refusal", err)
	}
	if err := w.ModelCall(shownCall(shotImage())); err != nil {
		t.Errorf("the stored image: %v", err)
	}
	if got := w.counts.ModelCalls; got != 1 {
		t.Errorf("%d model calls written, want 1", got)
	}
}
