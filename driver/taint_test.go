package driver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// taintSecret is what the taint test types, with Redact.
const taintSecret = "Tq7-taint-S3cret-v4lue"

// taintPage is a sign-in page that, once something is typed into its
// password field #f1, shows it ("show password": type=text) and copies
// the value into attributes of the same element. Nothing but the taint
// marks #f1 sensitive then: its id and name look like nothing secret.
// #card is sensitive by its facts (autocomplete cc-number) and holds a
// value from the start. Boxes are absolute, in CSS pixels: #box holds #f1
// at (20, 20) of its own.
const taintPage = `<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title>
<style>body{margin:0;background:#fff;font:20px sans-serif} input{box-sizing:border-box;border:1px solid #888;font:20px monospace;color:#000;background:#fff}</style></head><body>
<div id="box" style="position:absolute;left:20px;top:40px;width:400px;height:100px;background:#fff">
<label for="f1" style="position:absolute;left:340px;top:0">Password</label>
<input type="password" id="f1" name="login" autocomplete="off" placeholder="Your password" style="position:absolute;left:20px;top:20px;width:300px;height:40px">
</div>
<input id="card" autocomplete="cc-number" value="4111 1111 1111 1111" style="position:absolute;left:40px;top:200px;width:300px;height:40px">
<button id="ok" style="position:absolute;left:40px;top:300px;width:200px;height:40px">Continue</button>
<script>
const f = document.getElementById('f1');
f.addEventListener('input', () => {
  f.type = 'text';
  f.setAttribute('value', f.value);
  f.dataset.copy = f.value;
  f.title = f.value;
  f.setAttribute('aria-label', f.value);
  f.placeholder = f.value;
  document.title = 'Shown';
});
</script></body></html>`

// movingPage moves its password field by a pixel every frame once
// something is typed into it.
const movingPage = `<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title></head><body style="margin:0">
<input type="password" id="f1" name="login" style="position:absolute;left:40px;top:60px;width:300px;height:40px">
<script>
const f = document.getElementById('f1');
let x = 40;
const step = () => { x = x > 600 ? 40 : x + 1; f.style.left = x + 'px'; requestAnimationFrame(step); };
f.addEventListener('input', () => { f.type = 'text'; requestAnimationFrame(step); }, { once: true });
</script></body></html>`

// editablePage is a contenteditable element with text in it, which the
// page copies into an attribute when it changes.
const editablePage = `<!doctype html><html><head><meta charset="utf-8"><title>Note</title></head><body style="margin:0;background:#fff">
<div id="ce" contenteditable="true" aria-label="Note" style="position:absolute;left:40px;top:60px;width:300px;height:40px;font:20px monospace">old <b>text</b></div>
<script>
const ce = document.getElementById('ce');
ce.addEventListener('input', () => { ce.dataset.copy = ce.textContent; document.title = 'Typed'; });
</script></body></html>`

// The boxes of taintPage, in CSS pixels of the viewport.
var (
	fieldBox = image.Rect(40, 60, 340, 100)
	cardBox  = image.Rect(40, 200, 340, 240)
	blankBox = image.Rect(500, 60, 700, 100) // page background: never masked
)

// TestTaintMasksTypedSecret types a secret (Redact) into a password field
// that the page then switches to type=text and copies into its
// attributes: no observation, description or extraction holds it, and
// every pixel of the field in a screenshot (of the page, or of an element
// around it) is MaskColor; so is a sensitive field's, never the page
// background's. In the Playwright driver and the extension driver.
func TestTaintMasksTypedSecret(t *testing.T) {
	site := servePages(t, map[string]string{"": taintPage, "/moving": movingPage, "/editable": editablePage})
	inBothDrivers(t, site, func(t *testing.T, d driver.Driver, _ contract.DriverMode) {
		checkTaint(t, d, site)
		checkTaintEditable(t, d, site)
	})
}

// checkTaintEditable types the secret into an element with text in it
// (contenteditable): its text, the page's copy of it in an attribute and
// its box in a screenshot are masked; Describe reports no text for it.
func checkTaintEditable(t *testing.T, d driver.Driver, site string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + "/editable"}); err != nil {
		t.Fatal(err)
	}
	if el, err := d.Describe(ctx, "#ce"); err != nil || el.Text != "old text" {
		t.Fatalf("Describe(#ce) before = %+v, %v", el, err)
	}
	if _, err := act(t, d, contract.Action{Type: contract.ActType, Selector: "#ce", Text: taintSecret, Redact: true}); err != nil {
		t.Fatal(err)
	}
	waitTitle(t, d, "Typed")
	el, err := d.Describe(ctx, "#ce")
	if err != nil {
		t.Fatal(err)
	}
	noLeak(t, "described element", el)
	if el.Text != "" || el.Label != "" {
		t.Errorf("Describe(#ce) = %+v, want no text and no label (its aria-label is its own attribute)", el)
	}
	for _, sel := range []string{"#ce", "#ce b", ""} {
		if _, err := act(t, d, contract.Action{Type: contract.ActExtract, Extract: contract.ExtractText, Selector: sel}); err != nil && sel != "#ce b" {
			t.Fatal(err)
		}
	}
	noLeak(t, "extracted text", d.TakeArtifacts())
	img, _ := screenshot(t, d, "")
	obs, err := d.Observe(ctx, driver.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale := float64(img.Bounds().Dx()) / float64(obs.State.Viewport.Width)
	allMask(t, "the typed element", img, scaled(fieldBox, scale, image.Point{}))
}

func checkTaint(t *testing.T, d driver.Driver, site string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := typeSecretAt(t, d, site, "/login", "#f1"); err != nil {
		t.Fatal(err)
	}
	obs := waitTitle(t, d, "Shown")
	if !strings.Contains(obs.DOMSnapshot, `"type":"text"`) {
		t.Errorf("the snapshot does not show the field switched to type=text: %s", obs.DOMSnapshot)
	}
	if !strings.Contains(obs.DOMSnapshot, `"$value":"`+driver.Mask+`"`) {
		t.Errorf("the snapshot does not mask the field's value: %s", obs.DOMSnapshot)
	}
	el, err := d.Describe(ctx, "#f1")
	if err != nil {
		t.Fatal(err)
	}
	noLeak(t, "described element", el)
	if el.Type != "text" || el.Label != "Password" {
		t.Errorf("Describe(#f1) = %+v, want type text, label Password (from its <label> only)", el)
	}
	for _, sel := range []string{"#f1", ""} {
		if _, err := act(t, d, contract.Action{Type: contract.ActExtract, Extract: contract.ExtractText, Selector: sel}); err != nil {
			t.Fatal(err)
		}
	}
	arts := d.TakeArtifacts()
	noLeak(t, "extracted text", arts)
	if len(arts) != 2 || arts[0].Artifact.Value != driver.Mask {
		t.Errorf("extract text of the field = %+v, want %q", arts, driver.Mask)
	}

	// A screenshot of the page: the field and the card number painted over.
	img, masked := screenshot(t, d, "")
	if masked == 0 {
		t.Errorf("the screenshot says nothing was masked")
	}
	scale := float64(img.Bounds().Dx()) / float64(obs.State.Viewport.Width)
	allMask(t, "the typed field", img, scaled(fieldBox, scale, image.Point{}))
	allMask(t, "the card number field", img, scaled(cardBox, scale, image.Point{}))
	notMask(t, "the page background", img, scaled(blankBox, scale, image.Point{}))

	// A screenshot of #box (at 20, 40): the field is at (20, 20) in it.
	img, _ = screenshot(t, d, "#box")
	if got, want := img.Bounds().Dx(), int(400*scale+0.5); got < want-2 || got > want+2 {
		t.Errorf("the screenshot of #box is %d pixels wide, want %d", got, want)
	}
	allMask(t, "the typed field in #box", img, scaled(fieldBox, scale, image.Pt(20, 40)))
	notMask(t, "the background of #box", img, scaled(image.Rect(20, 70, 310, 95), scale, image.Point{}))

	// A page that moves the field while it is captured gets no screenshot.
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + "/moving"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Describe(ctx, "#f1"); err != nil {
		t.Fatal(err)
	}
	if _, err := act(t, d, contract.Action{Type: contract.ActType, Selector: "#f1", Text: taintSecret, Redact: true}); err != nil {
		t.Fatal(err)
	}
	_, err = act(t, d, contract.Action{Type: contract.ActExtract, Extract: contract.ExtractScreenshot})
	if err == nil || !strings.Contains(err.Error(), "moved during the screenshot") {
		t.Errorf("a screenshot while the typed field moves: error %v, want it refused", err)
	}
	if arts := d.TakeArtifacts(); len(arts) != 0 {
		t.Errorf("a refused screenshot left %d artifacts", len(arts))
	}
}

// noLeak fails t if v, marshalled, holds taintSecret.
func noLeak(t *testing.T, what string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(taintSecret)) {
		t.Fatalf("%s holds the secret: %s", what, b)
	}
}

// screenshot extracts a screenshot of sel and decodes it.
func screenshot(t *testing.T, d driver.Driver, sel string) (image.Image, int) {
	t.Helper()
	if _, err := act(t, d, contract.Action{Type: contract.ActExtract, Extract: contract.ExtractScreenshot, Selector: sel}); err != nil {
		t.Fatal(err)
	}
	arts := d.TakeArtifacts()
	if len(arts) != 1 || arts[0].Image == nil || arts[0].Image.MIMEType != contract.MIMEPNG {
		t.Fatalf("screenshot artifacts = %+v, want one PNG", arts)
	}
	img, err := png.Decode(bytes.NewReader(arts[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	return img, arts[0].Masked
}

// scaled is the box r, less origin, in image pixels at scale, shrunk by a
// pixel against rounding.
func scaled(r image.Rectangle, scale float64, origin image.Point) image.Rectangle {
	r = r.Sub(origin)
	return image.Rect(int(float64(r.Min.X)*scale)+1, int(float64(r.Min.Y)*scale)+1, int(float64(r.Max.X)*scale)-1, int(float64(r.Max.Y)*scale)-1)
}

func isMask(img image.Image, x, y int) bool {
	r, g, b, a := img.At(x, y).RGBA()
	mr, mg, mb, ma := driver.MaskColor.RGBA()
	return r == mr && g == mg && b == mb && a == ma
}

// allMask fails t unless every pixel of r is MaskColor.
func allMask(t *testing.T, what string, img image.Image, r image.Rectangle) {
	t.Helper()
	if !r.In(img.Bounds()) {
		t.Fatalf("%s: box %v is outside the image %v", what, r, img.Bounds())
	}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if !isMask(img, x, y) {
				t.Fatalf("%s: pixel (%d, %d) of %v is %v, not the mask colour", what, x, y, r, img.At(x, y))
			}
		}
	}
}

// notMask fails t if every pixel of r is MaskColor.
func notMask(t *testing.T, what string, img image.Image, r image.Rectangle) {
	t.Helper()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if !isMask(img, x, y) {
				return
			}
		}
	}
	t.Errorf("%s (%v) is masked", what, r)
}
