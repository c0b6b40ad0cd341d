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

	"github.com/playwright-community/playwright-go"
	"golang.org/x/net/html"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/internal/a11ytest"
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
	ids, hrefs := map[string]bool{}, []string{}
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
				if k == "id" {
					if ids[a.Val] {
						t.Errorf("two elements have id %q", a.Val)
					}
					ids[a.Val] = true
				}
				if k == "href" && strings.HasPrefix(a.Val, "#") {
					hrefs = append(hrefs, a.Val[1:])
				}
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
	for _, h := range hrefs {
		if !ids[h] {
			t.Errorf("a link to #%s, which the report does not have", h)
		}
	}
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
// with every step unfolded (as a reader who opens them all sees it: the
// driver runs no script, so the page is changed before it is served),
// keeps a screenshot of it in the test's artifact directory, and returns
// the page as the browser shows it. pwned counts requests to /pwned: a
// script that ran would make one.
func render(t *testing.T, page []byte, name string) (contract.Observation, *atomic.Int32) {
	t.Helper()
	page = unfold(page)
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
// that Chromium renders, with the verification status at the top, then the
// summary (the outcome, one line per step, the extracted table as a table,
// the denial, the approval), the timeline whose thumbnails link to the
// steps, the goal, the plan, every step numbered as the CLI numbers it, the
// screenshot and the final output with the extracted table; without
// accessibility violations in the light and the dark scheme.
func TestReportDemo(t *testing.T) {
	bundle, _ := demoBundle(t)
	page := report(t, bundle)
	body, text := checkSelfContained(t, page)
	class, head := banner(t, body)
	if !strings.Contains(class, "valid") || !strings.HasPrefix(head, "Verified") {
		t.Errorf("banner %q %q, want valid first", class, head)
	}
	// One numbering with the CLI: a9 ran as step 9, a10 (denied) and a11
	// were both proposed as step 10, a12 ran as step 11.
	for i := 1; i <= 11; i++ {
		if !strings.Contains(text, fmt.Sprintf("Step %d: ", i)) {
			t.Errorf("the report lacks step %d", i)
		}
	}
	if got := strings.Count(text, "Step 10: navigate to "); got != 2 {
		t.Errorf("%d proposals under step 10, want 2 (the denied navigation and the next)", got)
	}
	if strings.Contains(text, "Step 12: ") {
		t.Error("the report numbers a step 12: it counts proposals, not the CLI's steps")
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
		t.Error("the report has no screenshot")
	}

	doc := parse(t, page)
	tests := []struct {
		id   string
		want []string
	}{
		{"outcome", []string{"Completed", "The order A-1001 was placed"}},
		{"counts", []string{"12 actions proposed: 11 executed, 1 not executed (denied); 2 approved; 1 result extracted."}},
		{"extracted", []string{"A-1001", "step 11"}},
		{"denials", []string{"Step 10", "navigate to http://evil.example/deals", "origin_not_allowed"}},
		{"approvals", []string{"Step 3", "type into #password", "Step 8", "click #submit", "approved by alice@example.com"}},
		{"final", []string{"Completed", "Step 11: extract table of #orders"}},
		{"final-extracted", []string{"A-1005"}},
	}
	for _, tt := range tests {
		got := textOf(byID(t, doc, tt.id))
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("#%s says %q, want it to say %q", tt.id, got, w)
			}
		}
	}
	checkSummary(t, doc, "ok", 12)
	for _, id := range []string{"extracted", "final-extracted"} {
		tables := findAll(byID(t, doc, id), func(n *html.Node) bool { return n.Data == "table" })
		if len(tables) != 1 {
			t.Fatalf("#%s has %d tables, want the orders table", id, len(tables))
		}
		if got, want := len(findAll(tables[0], func(n *html.Node) bool { return n.Data == "tr" })), 6; got != want {
			t.Errorf("#%s: the orders table has %d rows, want %d (the header and 5 orders)", id, got, want)
		}
		if strings.Contains(textOf(byID(t, doc, id)), `["`) {
			t.Errorf("#%s shows raw JSON", id)
		}
	}
	if got := strings.Count(textOf(byID(t, doc, "done")), "Step "); got != 12 {
		t.Errorf("%d lines under What was done, want 12", got)
	}
	thumbs := findAll(byID(t, doc, "timeline"), func(n *html.Node) bool { return n.Data == "img" })
	if len(thumbs) != 1 || !strings.HasPrefix(attr(thumbs[0], "src"), "data:image/jpeg;base64,") || attr(thumbs[0].Parent, "href") != "#step-9" {
		t.Errorf("timeline thumbnails %d, want one, scaled, of the screenshot of step 9 linking to #step-9", len(thumbs))
	}

	obs, pwned := render(t, page, "demo-report")
	if !strings.HasPrefix(obs.State.Title, "aegis evidence report") {
		t.Errorf("rendered title %q", obs.State.Title)
	}
	for _, want := range []string{"Verified: this evidence bundle", "Completed", "Step 1: navigate to", "Step 11: extract table of #orders", "Final output"} {
		if !strings.Contains(obs.DOMText, want) {
			t.Errorf("the rendered report does not show %q", want)
		}
	}
	if n := pwned.Load(); n != 0 {
		t.Errorf("rendering the report made %d requests besides the report", n)
	}
	p := openReport(t, page)
	a11ytest.RequireClean(t, p, "demo-report")
	checkRendered(t, p, 12, "#step-9")
	unfoldAll(t, p)
	a11ytest.RequireClean(t, p, "demo-report-unfolded")
}

// TestReportDenied: the report of a session that ended after a person
// refused the approval and the policy denied a navigation says so at the
// top of the summary, apart from the verification banner, which says the
// bundle is intact: an intact record of a failure does not read as a
// success.
func TestReportDenied(t *testing.T) {
	s := newSite(t)
	all := demoActions(s.URL)
	// Nobody approves: the password (a3) and "place the order" (a8) are
	// refused, then the policy denies the navigation (a10).
	actions := append(all[:8:8], all[9])
	bundle := record(t, recording{site: s, actions: actions, status: contract.SessionAborted,
		summary: "denied by a person at the terminal: click #submit"})
	page := report(t, bundle)
	body, _ := checkSelfContained(t, page)
	class, head := banner(t, body)
	if !strings.Contains(class, "valid") || !strings.HasPrefix(head, "Verified") {
		t.Errorf("banner %q %q, want valid first", class, head)
	}
	doc := parse(t, page)
	tests := []struct {
		id        string
		want, not []string
	}{
		{"outcome", []string{"Aborted", "The last action refused: step 7, navigate to http://evil.example/deals", "denied by a person at the terminal"}, []string{"Completed", "Verified"}},
		{"counts", []string{"9 actions proposed: 6 executed, 3 not executed (denied); 0 approved; 0 results extracted."}, nil},
		{"denials", []string{"Step 3", "type into #password", "Step 7", "click #submit", "approval_denied", "navigate to http://evil.example/deals", "origin_not_allowed"}, nil},
		{"approvals", []string{"Step 3", "Step 7", "asked, and not approved", "nobody approved"}, []string{"approved by"}},
		{"extracted", []string{"Nothing was extracted."}, nil},
		{"final", []string{"Aborted", "Step 7: navigate to http://evil.example/deals"}, nil},
	}
	for _, tt := range tests {
		got := textOf(byID(t, doc, tt.id))
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("#%s says %q, want it to say %q", tt.id, got, w)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(got, w) {
				t.Errorf("#%s says %q, want it not to say %q", tt.id, got, w)
			}
		}
	}
	checkSummary(t, doc, "bad", 9)
	p := openReport(t, page)
	a11ytest.RequireClean(t, p, "denied-report")
	checkRendered(t, p, 9, "#step-7-2")
	unfoldAll(t, p)
	a11ytest.RequireClean(t, p, "denied-report-unfolded")
}

// checkSummary checks the order of the report's parts (the verification
// banner, then the summary with the outcome, then the timeline with one
// entry per proposal, then the steps) and that the outcome, of class
// outcomeClass, is a different element from the banner.
func checkSummary(t *testing.T, doc *html.Node, outcomeClass string, proposals int) {
	t.Helper()
	order := []string{"verification", "summary", "outcome", "timeline", "final"}
	pos := map[string]int{}
	i := 0
	walkAll(doc, func(n *html.Node) {
		i++
		if id := attr(n, "id"); id != "" {
			pos[id] = i
		}
	})
	for k := 1; k < len(order); k++ {
		if pos[order[k-1]] == 0 || pos[order[k]] == 0 || pos[order[k-1]] >= pos[order[k]] {
			t.Errorf("#%s is not before #%s", order[k-1], order[k])
		}
	}
	if pos["timeline"] >= pos["step-1"] {
		t.Error("the timeline is not before the steps")
	}
	out := byID(t, doc, "outcome")
	if c := attr(out, "class"); !strings.Contains(c, "outcome "+outcomeClass) {
		t.Errorf("outcome class %q, want %q", c, outcomeClass)
	}
	if c := attr(byID(t, doc, "verification"), "class"); strings.Contains(c, "outcome") {
		t.Errorf("the verification banner has the outcome's class %q", c)
	}
	links := findAll(byID(t, doc, "timeline"), func(n *html.Node) bool { return n.Data == "a" })
	if len(links) != proposals {
		t.Errorf("%d timeline entries, want %d", len(links), proposals)
	}
	steps := findAll(doc, func(n *html.Node) bool { return n.Data == "details" && strings.Contains(attr(n, "class"), "step") })
	for _, d := range steps {
		if attr(d, "open") != "" || hasAttr(d, "open") {
			t.Error("a step's details are open: they start folded")
		}
	}
	if len(steps) != proposals {
		t.Errorf("%d steps, want %d", len(steps), proposals)
	}
}

// checkRendered checks the report as Chromium lays it out: every timeline
// entry links to a step that exists; following one unfolds its step; and
// the page, folded, is not a wall.
func checkRendered(t *testing.T, p playwright.Page, proposals int, follow string) {
	t.Helper()
	got, err := p.Evaluate(`() => [...document.querySelectorAll('#timeline a')].filter(a => document.getElementById(a.getAttribute('href').slice(1))).length`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := got.(int); n != proposals {
		t.Errorf("%v timeline entries link to a step that exists, want %d", got, proposals)
	}
	h, err := p.Evaluate(`() => document.documentElement.scrollHeight`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := h.(int); n > 6000 {
		t.Errorf("the report is %d px high with its steps folded, want at most 6000", n)
	}
	if err := p.Locator(`#timeline a[href="` + follow + `"]`).Click(); err != nil {
		t.Fatal(err)
	}
	open, err := p.Evaluate(`(id) => document.getElementById(id).closest('details').open`, follow[1:])
	if err != nil {
		t.Fatal(err)
	}
	if open != true {
		t.Errorf("following the timeline's link to %s left the step folded", follow)
	}
}

// unfoldAll opens every details element of the page, as a reader who
// unfolds every step does.
func unfoldAll(t *testing.T, p playwright.Page) {
	t.Helper()
	if _, err := p.Evaluate(`() => document.querySelectorAll('details').forEach(d => { d.open = true })`); err != nil {
		t.Fatal(err)
	}
}

// openReport serves the report on loopback and opens it in a page of a
// browser launched by a11ytest, 1100 px wide; a request for anything else
// fails the test (a script that ran would make one).
func openReport(t *testing.T, page []byte) playwright.Page {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/report.html" {
			t.Errorf("the report requested %s", r.URL.Path)
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	}))
	t.Cleanup(srv.Close)
	b := a11ytest.Launch(t)
	p, err := b.NewPage(playwright.BrowserNewPageOptions{Viewport: &playwright.Size{Width: 1100, Height: 900}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Goto(srv.URL + "/report.html"); err != nil {
		t.Fatal(err)
	}
	return p
}

func parse(t *testing.T, page []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func walkAll(n *html.Node, f func(*html.Node)) {
	if n.Type == html.ElementNode {
		f(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walkAll(c, f)
	}
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	walkAll(n, func(c *html.Node) {
		if match(c) {
			out = append(out, c)
		}
	})
	return out
}

func byID(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	ns := findAll(doc, func(n *html.Node) bool { return attr(n, "id") == id })
	if len(ns) != 1 {
		t.Fatalf("%d elements with id %q, want 1", len(ns), id)
	}
	return ns[0]
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

// textOf is the text of n, its pieces joined by spaces.
func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// unfold opens every step's details in the report page.
func unfold(page []byte) []byte {
	return bytes.ReplaceAll(page, []byte(`<details class="step `), []byte(`<details open class="step `))
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
	if strings.Contains(text, "Step 11: ") || strings.Contains(text, "Refunded!") {
		t.Error("the report shows records after the tampered place")
	}
	if !strings.Contains(text, "Step 10: ") {
		t.Error("the report does not show the steps before the tampered place")
	}
	if got := textOf(byID(t, parse(t, page), "outcome")); !strings.Contains(got, "Unknown") || !strings.Contains(got, "fails verification") {
		t.Errorf("the outcome of a tampered bundle says %q, want unknown, the record cut where it fails verification", got)
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
	if !strings.Contains(text, "Step 11: ") {
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
