package driver_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/nativehost/nativehosttest"
)

// paintPages are pages that draw the field a secret is typed into
// somewhere its box does not cover, by path: a reflection below it, and
// an iframe scaled three times (its content drawn at three times the
// offsets the frame's box gives).
var paintPages = map[string]string{
	"/reflect": `<!doctype html><html><body style="margin:0">
<input id="f1" name="login" style="position:absolute;left:40px;top:60px;width:300px;height:40px;-webkit-box-reflect:below 10px">
</body></html>`,
	"/scaled": `<!doctype html><html><body style="margin:0">
<iframe id="fr" style="position:absolute;left:0;top:0;width:400px;height:120px;border:0;transform:scale(3);transform-origin:0 0"
 srcdoc="<body style='margin:0'><input id='f1' name='login' style='position:absolute;left:10px;top:10px;width:200px;height:30px'></body>"></iframe>
</body></html>`,
}

// TestTaintPaintedOutside types a secret into the fields of paintPages:
// each screenshot is refused, in the Playwright driver and the extension
// driver.
func TestTaintPaintedOutside(t *testing.T) {
	site := servePages(t, paintPages)
	inBothDrivers(t, site, func(t *testing.T, d driver.Driver, _ contract.DriverMode) { checkPaintedOutside(t, d, site) })
}

// servePages serves pages (HTML, by path; "" for any other path) on
// loopback for the taint tests, which need Chromium: skipped in -short
// mode. It returns the site's URL.
func servePages(t *testing.T, pages map[string]string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page, ok := pages[r.URL.Path]
		if !ok {
			page = pages[""]
		}
		fmt.Fprint(w, page)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// inBothDrivers runs check in a Playwright driver and an extension driver
// for site, each closed with its subtest.
func inBothDrivers(t *testing.T, site string, check func(t *testing.T, d driver.Driver, mode contract.DriverMode)) {
	t.Run("playwright", func(t *testing.T) {
		d := open(t, contract.ModePlaywright, site)
		closeDriver(t, d)
		check(t, d, contract.ModePlaywright)
	})
	t.Run("extension", func(t *testing.T) {
		check(t, openExtensionDriver(t, site), contract.ModeExtension)
	})
}

// openExtensionDriver opens an extension driver for site through a
// native host relay, closed with t.
func openExtensionDriver(t *testing.T, site string) driver.Driver {
	t.Helper()
	b := nativehosttest.Start(t, nativehosttest.Options{Relay: true})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	conn, err := b.ConnectDriver(ctx)
	if err != nil {
		t.Fatalf("%v\nhost log:\n%s", err, b.HostLog())
	}
	octx, ocancel := context.WithTimeout(ctx, 30*time.Second)
	defer ocancel()
	d, err := driver.OpenExtension(octx, driver.Config{Mode: contract.ModeExtension, AllowedOrigins: []string{site}, ActionTimeout: 3 * time.Second},
		driver.ExtensionTarget{Port: conn})
	if err != nil {
		t.Fatalf("open the extension driver: %v", err)
	}
	closeDriver(t, d)
	return d
}

func checkPaintedOutside(t *testing.T, d driver.Driver, site string) {
	for _, c := range []struct{ path, sel, why string }{
		{"/reflect", "#f1", "-webkit-box-reflect"},
		{"/scaled", "#fr >>> #f1", "around a frame"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + c.path}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Describe(ctx, c.sel); err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, err := act(t, d, contract.Action{Type: contract.ActType, Selector: c.sel, Text: taintSecret, Redact: true}); err != nil {
			t.Fatal(err)
		}
		for _, sel := range []string{"", c.sel} {
			_, err := act(t, d, contract.Action{Type: contract.ActExtract, Extract: contract.ExtractScreenshot, Selector: sel})
			if err == nil || !strings.Contains(err.Error(), "drawn outside its box") || !strings.Contains(err.Error(), c.why) {
				t.Errorf("%s: screenshot of %q: error %v, want it refused for %s", c.path, sel, err, c.why)
			}
		}
		if arts := d.TakeArtifacts(); len(arts) != 0 {
			t.Errorf("%s: refused screenshots left %d artifacts", c.path, len(arts))
		}
	}
}

// oscillatingPage moves its field, once typed into, between two places
// every frame (A-B-A: two boxes measured a frame apart may agree), by its
// transform; the field is pure red, which nothing else on the page is.
const oscillatingPage = `<!doctype html><html><body style="margin:0;background:#fff">
<input id="f1" name="login" style="position:absolute;left:40px;top:60px;width:300px;height:40px;border:0;background:#f00;color:#f00">
<script>
const f = document.getElementById('f1');
let on = false;
const step = () => { on = !on; f.style.transform = on ? 'translateX(500px)' : 'none'; requestAnimationFrame(step); };
f.addEventListener('input', () => requestAnimationFrame(step), { once: true });
</script></body></html>`

// bodyOscillatingPage does the same by a class of <body>, whose changes
// count only when the field moved with them.
const bodyOscillatingPage = `<!doctype html><html><head><style>body.b #f1 { transform: translateX(500px) }</style></head>
<body style="margin:0;background:#fff">
<input id="f1" name="login" style="position:absolute;left:40px;top:60px;width:300px;height:40px;border:0;background:#f00;color:#f00">
<script>
const step = () => { document.body.classList.toggle('b'); requestAnimationFrame(step); };
document.getElementById('f1').addEventListener('input', () => requestAnimationFrame(step), { once: true });
</script></body></html>`

// TestTaintOscillating takes screenshots of oscillatingPage and
// bodyOscillatingPage: each one is
// refused, or has no red pixel left (the field masked wherever it was
// drawn). Nothing depends on timing: whichever way each turns out, the
// assertion holds.
func TestTaintOscillating(t *testing.T) {
	site := servePages(t, map[string]string{"": oscillatingPage, "/body": bodyOscillatingPage})
	inBothDrivers(t, site, func(t *testing.T, d driver.Driver, _ contract.DriverMode) {
		for _, path := range []string{"/", "/body"} {
			checkOscillating(t, d, site+path)
		}
	})
}

// checkOscillating types the secret into the field of the page at url and
// takes four screenshots: each is refused as moved, or has no red pixel.
func checkOscillating(t *testing.T, d driver.Driver, url string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: url}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Describe(ctx, "#f1"); err != nil {
		t.Fatal(err)
	}
	if _, err := act(t, d, contract.Action{Type: contract.ActType, Selector: "#f1", Text: taintSecret, Redact: true}); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for i := 0; i < 4; i++ {
		_, err := act(t, d, contract.Action{Type: contract.ActExtract, Extract: contract.ExtractScreenshot})
		if err != nil {
			if !strings.Contains(err.Error(), "moved during the screenshot") {
				t.Fatalf("screenshot %d: %v, want it taken or refused as moved", i, err)
			}
			refused++
			continue
		}
		arts := d.TakeArtifacts()
		if len(arts) != 1 {
			t.Fatalf("screenshot %d: %d artifacts", i, len(arts))
		}
		img, _, err := image.Decode(bytes.NewReader(arts[0].Data))
		if err != nil {
			t.Fatal(err)
		}
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				if r, g, bl, _ := img.At(x, y).RGBA(); r > 0xe000 && g < 0x2000 && bl < 0x2000 {
					t.Fatalf("screenshot %d: pixel (%d, %d) is the field's red: it was not masked where it was drawn", i, x, y)
				}
			}
		}
	}
	t.Logf("%s: %d of 4 screenshots refused", url, refused)
}
