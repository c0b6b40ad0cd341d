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

// shotImage is the image the fixture stores (artifacts/shot-1.png), as a
// model call names it.
func shotImage() contract.ModelImage {
	return contract.ModelImage{URI: "artifacts/shot-1.png", SHA256: Hash(sha256.Sum256(examplePNG())).String()}
}

// imageBundle writes the fixture's session, then a model call that showed
// the model the fixture's screenshot, and seals it.
func imageBundle(t *testing.T) map[string][]byte {
	t.Helper()
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), ApprovalKey: testApprovalKey()})
	if err != nil {
		t.Fatal(err)
	}
	writeSession(t, w, fixture{})
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
// absent, has another hash, or is recorded after the call, is refused at
// the model call, citing rule 17.
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
		{"another hash", func(f *forgery) { setImage(f, "sha256", hex64("other pixels")) }, "images[0] (artifacts/shot-1.png) has sha256 " + hex64("other pixels") + ", but that image's contentHash is " + shotImage().SHA256},
		{"recorded after the call", func(f *forgery) {
			i := f.find(FileModelCalls, calls)
			call := f.entries[i]
			f.remove(i)
			f.insert(f.find("artifacts/shot-1.png", 0), call)
		}, `images[0] names "artifacts/shot-1.png", which is not an image of the bundle recorded`},
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
// writes: a model call naming an image not stored, or of another hash, is
// refused, nothing is written, and the writer goes on.
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
