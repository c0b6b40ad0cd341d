package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

func report(t *testing.T, bundle string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := audit.Report(context.Background(), bundle, &buf); err != nil {
		t.Fatalf("report: %v", err)
	}
	return buf.Bytes()
}

// checkSelfContained parses the report and checks that it has no script,
// no event handler, no reference to anything outside itself, and exactly
// the one style element of its own; it returns the page's text.
func checkSelfContained(t *testing.T, page []byte) (body *html.Node, text string) {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var styles int
	var tb strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "iframe", "object", "embed", "link", "base", "form", "svg", "math":
				t.Errorf("the report has a <%s> element", n.Data)
			case "style":
				styles++
			case "body":
				body = n
			}
			for _, a := range n.Attr {
				k := strings.ToLower(a.Key)
				if strings.HasPrefix(k, "on") {
					t.Errorf("<%s> has an event handler %s=%q", n.Data, a.Key, a.Val)
				}
				if (k == "src" || k == "href") && !strings.HasPrefix(a.Val, "data:image/") && !strings.HasPrefix(a.Val, "#") {
					t.Errorf("<%s %s=%q> refers outside the report", n.Data, k, a.Val)
				}
				if k == "style" {
					t.Errorf("<%s> has a style attribute %q", n.Data, a.Val)
				}
			}
		}
		if n.Type == html.TextNode && (n.Parent == nil || n.Parent.Data != "style") {
			tb.WriteString(n.Data)
			tb.WriteString("\n")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if styles != 1 {
		t.Errorf("%d style elements, want 1", styles)
	}
	if body == nil {
		t.Fatal("no body")
	}
	return body, tb.String()
}

// banner returns the first element of body and its text.
func banner(t *testing.T, body *html.Node) (class, text string) {
	t.Helper()
	for c := body.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		for _, a := range c.Attr {
			if a.Key == "class" {
				class = a.Val
			}
		}
		var b strings.Builder
		var walk func(n *html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.TextNode {
				b.WriteString(n.Data)
			}
			for k := n.FirstChild; k != nil; k = k.NextSibling {
				walk(k)
			}
		}
		walk(c)
		return class, strings.TrimSpace(b.String())
	}
	t.Fatal("empty body")
	return "", ""
}

// render opens the report in headless Chromium, through the aegis driver,
// keeps a screenshot of it in the test's artifact directory, and returns
// the page as the browser shows it. pwned counts requests to /pwned: a
// script that ran would make one.
func render(t *testing.T, page []byte, name string) (contract.Observation, *atomic.Int32) {
	t.Helper()
	var pwned atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/report.html" {
			pwned.Add(1)
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := driver.Open(ctx, driver.Config{
		Mode: contract.ModePlaywright, Browser: browser(t), AllowedOrigins: []string{srv.URL},
		Viewport: contract.Viewport{Width: 1100, Height: 2400},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	tags := []string{}
	if res, err := d.Act(ctx, contract.Action{ID: "open", Type: contract.ActNavigate, PolicyTags: tags, URL: srv.URL + "/report.html"}); err != nil || !res.OK {
		t.Fatalf("open the report: %v %+v", err, res)
	}
	obs, err := d.Observe(ctx, driver.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Act(ctx, contract.Action{ID: "shot", Type: contract.ActExtract, PolicyTags: tags, Extract: contract.ExtractScreenshot}); err != nil {
		t.Fatal(err)
	}
	for _, ex := range d.TakeArtifacts() {
		if ex.Image == nil {
			continue
		}
		dir := t.ArtifactDir()
		p := filepath.Join(dir, name+".png")
		if err := os.WriteFile(p, ex.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".html"), page, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot of the rendered report: %s (keep it with go test -artifacts -outputdir DIR)", p)
	}
	return obs, &pwned
}

// TestReportDemo: the report of the demo bundle is one self-contained file
// that Chromium renders, with the verification status at the top, the
// goal, the plan, every step, the screenshot and the final output.
func TestReportDemo(t *testing.T) {
	bundle, _ := demoBundle(t)
	page := report(t, bundle)
	body, text := checkSelfContained(t, page)
	class, head := banner(t, body)
	if !strings.Contains(class, "valid") || !strings.HasPrefix(head, "Verified") {
		t.Errorf("banner %q %q, want valid first", class, head)
	}
	for i := 1; i <= 12; i++ {
		if !strings.Contains(text, fmt.Sprintf("Step %d: ", i)) {
			t.Errorf("the report lacks step %d", i)
		}
	}
	for _, want := range []string{
		"Sign in, place an order", "Place an order", // goal, plan
		"approved by alice@example.com", "origin_not_allowed", "place order", // approval, denial, risk reason
		"•••••• (secret, masked)", "Input latency", "The order A-1001 was placed", // masking, latencies, final output
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(string(page), "correct-horse") {
		t.Error("the report shows the typed password")
	}
	if !bytes.Contains(page, []byte(`src="data:image/png;base64,`)) {
		t.Error("the report has no screenshot thumbnail")
	}
	obs, pwned := render(t, page, "demo-report")
	if !strings.HasPrefix(obs.State.Title, "aegis evidence report") {
		t.Errorf("rendered title %q", obs.State.Title)
	}
	for _, want := range []string{"Verified: this evidence bundle", "Step 1: navigate to", "Step 12: extract table of #orders", "Final output"} {
		if !strings.Contains(obs.DOMText, want) {
			t.Errorf("the rendered report does not show %q", want)
		}
	}
	if n := pwned.Load(); n != 0 {
		t.Errorf("rendering the report made %d requests besides the report", n)
	}
}

// hostile is the text a page and a model put into a bundle to break out of
// the report.
const hostile = `</style></title><script>fetch('/pwned?s')</script><img src=x onerror="fetch('/pwned?i')"><!-- ]]> <a href="javascript:fetch('/pwned?a')">x</a>`

// TestReportHostile: page text, titles, labels, the model's reasons and the
// goal that try to inject markup are shown as text; nothing runs.
func TestReportHostile(t *testing.T) {
	s := newSite(t)
	s.Reset(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/evil" {
				next.ServeHTTP(w, r)
				return
			}
			e := html.EscapeString(hostile)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><html><head><title>%s</title></head><body><h1>%s</h1><p>%s</p><button id="b" aria-label="%s">%s</button></body></html>`, e, e, e, e, e)
		})
	})
	tags := []string{}
	bundle := record(t, recording{site: s, goal: "Read the page " + hostile, actions: []contract.Action{
		{ID: "h1", Type: contract.ActNavigate, Reason: hostile, PolicyTags: tags, URL: s.URL + "/evil"},
		{ID: "h2", Type: contract.ActClick, Reason: hostile, PolicyTags: tags, Selector: "#b"},
		{ID: "h3", Type: contract.ActExtract, Reason: hostile, PolicyTags: tags, Extract: contract.ExtractText, Selector: "h1"},
	}})
	page := report(t, bundle)
	_, text := checkSelfContained(t, page)
	if n := strings.Count(text, hostile); n < 5 {
		t.Errorf("the hostile text appears %d times as text, want at least 5 (goal, reasons, titles, page text)", n)
	}
	if bytes.Contains(page, []byte("<script>")) || bytes.Contains(page, []byte("onerror=\"")) {
		t.Error("the report holds the hostile markup unescaped")
	}
	obs, pwned := render(t, page, "hostile-report")
	if !strings.Contains(obs.DOMText, "fetch('/pwned?s')") {
		t.Error("the rendered report does not show the hostile text as text")
	}
	if !strings.HasPrefix(obs.State.Title, "aegis evidence report") {
		t.Errorf("rendered title %q: the hostile title broke out", obs.State.Title)
	}
	if n := pwned.Load(); n != 0 {
		t.Errorf("rendering the report made %d requests besides the report: something ran", n)
	}
}

// TestReportTampered: a tampered bundle's report says so first, with the
// place, and shows only what precedes it.
func TestReportTampered(t *testing.T) {
	bundle, _ := demoBundle(t)
	p := filepath.Join(bundle, "dom", "9.html")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("Cancelled"), []byte("Refunded!"), 1)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	page := report(t, bundle)
	body, text := checkSelfContained(t, page)
	class, head := banner(t, body)
	if !strings.Contains(class, "tampered") || !strings.HasPrefix(head, "TAMPERED") || !strings.Contains(head, "dom/9.html") || !strings.Contains(head, "ledger entry") {
		t.Fatalf("banner %q %q, want TAMPERED naming dom/9.html first", class, head)
	}
	if strings.Contains(text, "Step 12: ") || strings.Contains(text, "Refunded!") {
		t.Error("the report shows records after the tampered place")
	}
	if !strings.Contains(text, "Step 10: ") {
		t.Error("the report does not show the steps before the tampered place")
	}
}

// TestReportUnsealed: an unsealed bundle's report says so first.
func TestReportUnsealed(t *testing.T) {
	bundle, _ := demoBundle(t)
	unseal(t, bundle)
	page := report(t, bundle)
	body, text := checkSelfContained(t, page)
	class, head := banner(t, body)
	if !strings.Contains(class, "unsealed") || !strings.HasPrefix(head, "UNSEALED") {
		t.Fatalf("banner %q %q, want UNSEALED first", class, head)
	}
	if !strings.Contains(text, "Step 12: ") {
		t.Error("the unsealed report lacks the last step")
	}
}

// unseal turns a sealed bundle into the state a writer killed before the
// seal leaves: manifest.json as first written, no manifest-end.
func unseal(t *testing.T, bundle string) {
	t.Helper()
	start, err := os.ReadFile(filepath.Join(bundle, "provenance", "manifest-start.json"))
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := os.ReadFile(filepath.Join(bundle, "provenance", "ledger.json"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(ledger), "\n"), "\n")
	for _, f := range []struct{ name, data string }{
		{"manifest.json", string(start)},
		{"provenance/ledger.json", strings.Join(lines[:len(lines)-1], "")},
	} {
		if err := os.WriteFile(filepath.Join(bundle, f.name), []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(bundle, "provenance", "manifest-end.json"))
	os.Remove(filepath.Join(bundle, "provenance", "seal.dsse.json"))
}
