package driver_test

import (
	"context"
	"image"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// hostilePage is a sign-in page whose scripts, once its field #f1 (plain
// text, nothing sensitive in its facts) gets the focus, replace what an
// observer running in the page's main world (the Playwright driver's)
// might use: the array iterator turns a call's third argument true into
// false (checkFocus's secret), JSON.stringify and Object.assign empty the
// mask lists of any answer they serialize, the field gets an own
// isConnected that says false, and, once typed into, DOMRect's width
// getter says 0. The field is at (40, 60), 300x40 CSS pixels (fieldBox).
const hostilePage = `<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title></head>
<body style="margin:0;background:#fff">
<input id="f1" name="login" style="position:absolute;left:40px;top:60px;width:300px;height:40px;box-sizing:border-box;font:20px monospace;color:#000;background:#fff;border:1px solid #888">
<script>
const f = document.getElementById('f1');
f.addEventListener('focus', () => {
  const it = Array.prototype[Symbol.iterator];
  Array.prototype[Symbol.iterator] = function () {
    if (this.length === 3 && this[2] === true) return it.call([this[0], this[1], false]);
    return it.call(this);
  };
  const empty = (v) => {
    if (v && typeof v === 'object' && 'taint' in v) { v.taint = []; v.rects = []; }
    return v;
  };
  const js = JSON.stringify;
  JSON.stringify = function (v, r, s) { return js.call(this, empty(v), r, s); };
  const as = Object.assign;
  Object.assign = function (t, ...src) { return empty(as.call(this, t, ...src)); };
  Object.defineProperty(f, 'isConnected', { get: () => false });
  document.title = 'Hostile';
}, { once: true });
f.addEventListener('input', () => {
  Object.defineProperty(DOMRectReadOnly.prototype, 'width', { get: () => 0 });
  document.title = 'Typed';
}, { once: true });
</script></body></html>`

// resizedPage says its window is 300x200 CSS pixels (it assigns
// innerWidth and innerHeight, which replaces them for page scripts) and
// holds a field of 300x40 at (40, 60), which reaches past that.
const resizedPage = `<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title>
<script>window.innerWidth = 300; window.innerHeight = 200;</script></head>
<body style="margin:0;background:#fff">
<input id="f1" name="login" style="position:absolute;left:40px;top:60px;width:300px;height:40px;box-sizing:border-box;font:20px monospace;border:1px solid #888">
</body></html>`

// TestTaintHostileMainWorld types a secret into hostilePage's field with
// the Playwright driver, whose observer shares the page's main world:
// what the page replaced after the observer installed (it installs first,
// as an init script) changes nothing, and the field is painted over in
// the screenshot.
func TestTaintHostileMainWorld(t *testing.T) {
	site := servePages(t, map[string]string{"": hostilePage, "/resized": resizedPage})
	d := open(t, contract.ModePlaywright, site)
	closeDriver(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := typeSecretAt(t, d, site, "/login", "#f1"); err != nil {
		t.Fatal(err)
	}
	obs := waitTitle(t, d, "Typed")
	img, masked := screenshot(t, d, "")
	if masked == 0 {
		t.Errorf("the screenshot says nothing was masked")
	}
	scale := float64(img.Bounds().Dx()) / float64(obs.State.Viewport.Width)
	allMask(t, "the typed field", img, scaled(fieldBox, scale, image.Point{}))
	notMask(t, "the page background", img, scaled(blankBox, scale, image.Point{}))

	// An element screenshot is cropped from the whole viewport by the
	// viewport the observer measured with the getters it took at install,
	// not by what the page says its window is.
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + "/resized"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Describe(ctx, "#f1"); err != nil {
		t.Fatal(err)
	}
	if _, err := act(t, d, contract.Action{Type: contract.ActType, Selector: "#f1", Text: taintSecret, Redact: true}); err != nil {
		t.Fatal(err)
	}
	page, _ := screenshot(t, d, "")
	scale = float64(page.Bounds().Dx()) / driver.DefaultViewportWidth
	allMask(t, "the typed field", page, scaled(fieldBox, scale, image.Point{}))
	field, _ := screenshot(t, d, "#f1")
	if got, want := field.Bounds().Size(), image.Pt(int(300*scale+0.5), int(40*scale+0.5)); got.X < want.X-2 || got.X > want.X+2 || got.Y < want.Y-2 || got.Y > want.Y+2 {
		t.Errorf("the screenshot of #f1 is %v, want %v", got, want)
	}
	allMask(t, "the screenshot of the typed field", field, field.Bounds())
}

// replacingPage replaces its password field #f1, at every input, with a
// plain text field #f2 holding the same value, and shows the value in a
// textarea #copy too ("You typed: ..."). Neither is sensitive by its
// facts, nor the element the secret was typed into. #f2 takes #f1's box
// (fieldBox); #copy is at cardBox.
const replacingPage = `<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title></head>
<body style="margin:0;background:#fff">
<input type="password" id="f1" name="login" style="position:absolute;left:40px;top:60px;width:300px;height:40px">
<textarea id="copy" style="position:absolute;left:40px;top:200px;width:300px;height:40px;font:12px monospace;border:0;background:#fff;color:#000"></textarea>
<script>
document.addEventListener('input', (e) => {
  const f = e.target;
  if (f.id !== 'f1' && f.id !== 'f2') return;
  const n = document.createElement('input');
  n.id = 'f2';
  n.name = 'shown';
  n.style.cssText = f.style.cssText;
  n.value = f.value;
  f.replaceWith(n);
  document.getElementById('copy').value = 'You typed: ' + n.value;
  document.title = 'Replaced';
});
</script></body></html>`

// TestTaintReplacedField types a secret into replacingPage's field, which
// the page replaces with an untainted copy: the copy and the textarea
// that contains the value are masked in the observation, in Describe and
// in the screenshot, in both drivers.
func TestTaintReplacedField(t *testing.T) {
	site := servePages(t, map[string]string{"": replacingPage})
	inBothDrivers(t, site, func(t *testing.T, d driver.Driver, _ contract.DriverMode) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := typeSecretAt(t, d, site, "", "#f1"); err != nil {
			t.Fatal(err)
		}
		obs := waitTitle(t, d, "Replaced")
		for _, sel := range []string{"#f2", "#copy"} {
			el, err := d.Describe(ctx, sel)
			if err != nil {
				t.Fatal(err)
			}
			noLeak(t, "described "+sel, el)
		}
		if _, err := act(t, d, contract.Action{Type: contract.ActExtract, Extract: contract.ExtractText}); err != nil {
			t.Fatal(err)
		}
		noLeak(t, "extracted text", d.TakeArtifacts())
		img, _ := screenshot(t, d, "")
		scale := float64(img.Bounds().Dx()) / float64(obs.State.Viewport.Width)
		allMask(t, "the replacing field", img, scaled(fieldBox, scale, image.Point{}))
		allMask(t, "the textarea holding the value", img, scaled(cardBox, scale, image.Point{}))
	})
}

// focusThiefPage moves the focus from #f1 to #other (at cardBox) at the
// moment the observer checks that #f1 has it, by a getter of
// Document.activeElement that answers #f1 and focuses #other when the
// observer's checkFocus reads it: the keys sent next go to #other.
const focusThiefPage = `<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title></head>
<body style="margin:0;background:#fff">
<input id="f1" name="login" style="position:absolute;left:40px;top:60px;width:300px;height:40px">
<input id="other" name="note" style="position:absolute;left:40px;top:200px;width:300px;height:40px;font:20px monospace;color:#000;background:#fff">
<script>
const other = document.getElementById('other');
const d = Object.getOwnPropertyDescriptor(Document.prototype, 'activeElement');
Object.defineProperty(Document.prototype, 'activeElement', { configurable: true, get() {
  const a = d.get.call(this);
  if (/checkFocus/.test(new Error().stack)) other.focus();
  return a;
} });
other.addEventListener('input', () => { document.title = 'Other'; });
</script></body></html>`

// TestTaintFocusStolen types a secret into focusThiefPage's #f1 with the
// Playwright driver, which checks the focus and sends the keys in two
// steps: the keys land in #other, which is tainted (masked in the
// observation and the screenshot), and the action fails with
// target_changed.
func TestTaintFocusStolen(t *testing.T) {
	site := servePages(t, map[string]string{"": focusThiefPage})
	d := open(t, contract.ModePlaywright, site)
	closeDriver(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Describe(ctx, "#f1"); err != nil {
		t.Fatal(err)
	}
	_, err := act(t, d, contract.Action{Type: contract.ActType, Selector: "#f1", Text: taintSecret, Redact: true})
	if got := driver.CodeOf(err); got != contract.CodeTargetChanged {
		t.Fatalf("typing while the page moves the focus: %v (%s), want target_changed", err, got)
	}
	obs, err := d.Observe(ctx, driver.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if obs.State.Title != "Other" {
		t.Fatalf("title %q: the keys did not go to #other, the test tests nothing", obs.State.Title)
	}
	noLeak(t, "observation", obs)
	img, _ := screenshot(t, d, "")
	scale := float64(img.Bounds().Dx()) / float64(obs.State.Viewport.Width)
	allMask(t, "the field the keys went to", img, scaled(cardBox, scale, image.Point{}))
}
