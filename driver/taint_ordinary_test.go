package driver_test

import (
	"context"
	"image"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// ordinaryPages are pages styled or scripted as ordinary sites are, whose
// password field #f1 (at (40, 60), 300x40 CSS pixels: fieldBox) a secret
// is typed into, by path:
//   - /dark: a dark mode (a colour-only filter on <html>) and a
//     text-shadow on <body>, which form fields do not inherit;
//   - /busy: a background colour on <body> cycling forever, and a class
//     of <body> toggled every 10 ms that moves nothing;
//   - /relay: a field whose input handler tells a hidden field about it
//     with a synthetic input event;
//   - /shadow: a drop-shadow filter on an element around the field, which
//     draws it elsewhere (refused).
//
// /editable holds a contenteditable element #ed (at fieldBox) whose
// editing region grows to the element around it, #wrap, at the first
// key (beforeinput), so the input event goes to #wrap, the editing host
// then: an event whose target holds the checked element. Its input
// handler tells a <div> about it with a synthetic input event.
var ordinaryPages = map[string]string{
	"/dark": `<!doctype html><html><head><style>html{filter:invert(1)} body{margin:0;background:#ff0;text-shadow:0 0 1px #000}</style></head><body>
<p style="position:absolute;left:40px;top:0;margin:0">Sign in</p>
<input type="password" id="f1" name="login" style="position:absolute;left:40px;top:60px;width:300px;height:40px;box-sizing:border-box">
</body></html>`,
	"/busy": `<!doctype html><html><head><style>
@keyframes glow { from { background-color: #fff } to { background-color: #eef } }
body { margin: 0; animation: glow 1s infinite alternate } body.tick { color: #111 }
</style></head><body>
<input type="password" id="f1" name="login" style="position:absolute;left:40px;top:60px;width:300px;height:40px;box-sizing:border-box">
<script>setInterval(() => document.body.classList.toggle('tick'), 10);</script>
</body></html>`,
	"/relay": `<!doctype html><html><body style="margin:0">
<input type="password" id="f1" name="login" style="position:absolute;left:40px;top:60px;width:300px;height:40px;box-sizing:border-box">
<input type="hidden" id="h" name="h">
<script>
const f = document.getElementById('f1'), h = document.getElementById('h');
f.addEventListener('input', () => { h.value = String(f.value.length); h.dispatchEvent(new Event('input', { bubbles: true })); document.title = 'Relayed'; });
</script></body></html>`,
	"/shadow": `<!doctype html><html><body style="margin:0">
<div id="box" style="filter:drop-shadow(200px 0 0 #000)">
<input type="password" id="f1" name="login" style="position:absolute;left:40px;top:60px;width:300px;height:40px;box-sizing:border-box">
</div></body></html>`,
	"/editable": `<!doctype html><html><body style="margin:0">
<div id="wrap" style="position:absolute;left:40px;top:60px;width:300px;height:40px;font:20px monospace">
<div id="ed" contenteditable="true" style="width:300px;height:40px"><p style="margin:0">note</p></div></div>
<div id="count"></div>
<script>
const w = document.getElementById('wrap'), c = document.getElementById('count');
document.getElementById('ed').addEventListener('beforeinput', () => { w.contentEditable = 'true'; }, { once: true });
w.addEventListener('input', (e) => { c.dispatchEvent(new InputEvent('input', { bubbles: true })); document.title = 'Edited ' + e.target.id; });
</script>
</body></html>`,
}

// TestTaintOrdinaryPages types a secret into the fields of ordinaryPages:
// the dark, busy and relaying pages type fine and are screenshotted with
// the field masked, so does the contenteditable element, and the page
// with a drop-shadow around the field is still refused its screenshot. In
// the Playwright driver and the extension driver.
func TestTaintOrdinaryPages(t *testing.T) {
	site := servePages(t, ordinaryPages)
	inBothDrivers(t, site, func(t *testing.T, d driver.Driver, mode contract.DriverMode) {
		checkOrdinaryPages(t, d, site, mode == contract.ModePlaywright)
	})
}

// typeSecretAt navigates to site+path, describes sel and types the secret
// into it, as a session does.
func typeSecretAt(t *testing.T, d driver.Driver, site, path, sel string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + path}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Describe(ctx, sel); err != nil {
		t.Fatal(err)
	}
	_, err := act(t, d, contract.Action{Type: contract.ActType, Selector: sel, Text: taintSecret, Redact: true})
	return err
}

// waitTitle waits until the page's title starts with want, and checks
// that the observation holds no secret.
func waitTitle(t *testing.T, d driver.Driver, want string) contract.Observation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		obs, err := d.Observe(ctx, driver.ObserveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(obs.State.Title, want) {
			noLeak(t, "observation", obs)
			return obs
		}
		if ctx.Err() != nil {
			t.Fatalf("the page's title never started with %q", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkOrdinaryPages checks ordinaryPages in d; beforeInput says that d
// types with key events, which fire beforeinput (Playwright).
func checkOrdinaryPages(t *testing.T, d driver.Driver, site string, beforeInput bool) {
	for _, path := range []string{"/dark", "/busy", "/relay"} {
		if err := typeSecretAt(t, d, site, path, "#f1"); err != nil {
			t.Fatalf("%s: typing the secret: %v", path, err)
		}
		if path == "/relay" {
			waitTitle(t, d, "Relayed")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		obs, err := d.Observe(ctx, driver.ObserveOptions{})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		noLeak(t, path+": observation", obs)
		img, _ := screenshot(t, d, "")
		scale := float64(img.Bounds().Dx()) / float64(obs.State.Viewport.Width)
		allMask(t, path+": the typed field", img, scaled(fieldBox, scale, image.Point{}))
		if path != "/busy" {
			notMask(t, path+": the page background", img, scaled(blankBox, scale, image.Point{}))
		}
	}

	if err := typeSecretAt(t, d, site, "/editable", "#ed"); err != nil {
		t.Fatalf("/editable: typing the secret into a contenteditable element: %v", err)
	}
	obs := waitTitle(t, d, "Edited")
	// The extension inserts the text with execCommand, which fires no
	// beforeinput: the input goes to #ed there.
	if want := "Edited wrap"; beforeInput && obs.State.Title != want {
		t.Fatalf("/editable: title %q, want %q: the input did not go to the element around the checked one, the test tests nothing", obs.State.Title, want)
	}
	img, _ := screenshot(t, d, "")
	scale := float64(img.Bounds().Dx()) / float64(obs.State.Viewport.Width)
	allMask(t, "/editable: the typed element", img, scaled(fieldBox, scale, image.Point{}))

	if err := typeSecretAt(t, d, site, "/shadow", "#f1"); err != nil {
		t.Fatalf("/shadow: typing the secret: %v", err)
	}
	_, err := act(t, d, contract.Action{Type: contract.ActExtract, Extract: contract.ExtractScreenshot})
	if err == nil || !strings.Contains(err.Error(), "drawn outside its box") || !strings.Contains(err.Error(), "drop-shadow") {
		t.Errorf("/shadow: screenshot: error %v, want it refused for the drop-shadow", err)
	}
	if arts := d.TakeArtifacts(); len(arts) != 0 {
		t.Errorf("/shadow: a refused screenshot left %d artifacts", len(arts))
	}
}
