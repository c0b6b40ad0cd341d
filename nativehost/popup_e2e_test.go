package nativehost_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/internal/a11ytest"
	"github.com/aegis-run/aegis/nativehost"
	"github.com/aegis-run/aegis/nativehost/nativehosttest"
)

// What a person sees in the popup and the options page (issue 19): the
// result panel, the step list with thumbnails, the approval's affordances,
// the form kept when the popup reopens, and the model settings written
// through the host; each page checked with axe-core in both schemes.

const shopPassword = "correct-horse-battery-staple"

func TestPopupShowsWhatHappened(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	shop := newSite(t, demosite.Handler())
	b := nativehosttest.Start(t, nativehosttest.Options{Binary: aegisBinary(t), Config: nativehost.Config{
		Secrets: map[string]nativehost.Secret{"SHOP_PASSWORD": {Value: shopPassword, Origins: []string{shop.URL}}},
	}})

	t.Run("ResultPanel", func(t *testing.T) {
		goal := "read my orders and keep a picture of them"
		r := startFromPopup(t, b, shop.URL+"/form", goal,
			`navigate /orders`,
			`extract table "Orders"`,
			`extract screenshot`,
		)
		status, dir := r.ended()
		if status != contract.SessionCompleted {
			t.Fatalf("status %s: %s", status, r.text("#summary"))
		}
		verify(t, dir, contract.SessionCompleted)
		if !r.visible("#result") || !strings.Contains(r.text("#outcome"), "completed") {
			t.Errorf("result panel: visible %v, outcome %q", r.visible("#result"), r.text("#outcome"))
		}
		if done := r.text("#done"); !regexp.MustCompile(`^\d+ actions executed · 0 approved · 0 denied · `).MatchString(done) {
			t.Errorf("what was done: %q", done)
		}
		// The extracted table, as a table.
		heads, _ := r.popup.Locator("#extracted table th").AllTextContents()
		cells, _ := r.popup.Locator("#extracted table td").AllTextContents()
		if strings.Join(heads, "|") != "Order|Date|Status|Total" || len(cells) != 20 || cells[0] != "A-1001" || cells[19] != "€63.10" {
			t.Errorf("extracted table: heads %q, cells %q", heads, cells)
		}
		// The last screenshot, small, from the evidence.
		if !r.visible("#last-shot") {
			t.Fatal("no last screenshot")
		}
		src, _ := r.popup.Locator("#last-shot-img").GetAttribute("src")
		if !strings.HasPrefix(src, "data:image/jpeg;base64,") {
			t.Errorf("last screenshot src %.40q", src)
		}
		w, err := r.popup.Locator("#last-shot-img").Evaluate("(img) => String(img.naturalWidth)", nil)
		if n, _ := strconv.Atoi(fmt.Sprint(w)); err != nil || n <= 0 || n > nativehost.ThumbnailWidth {
			t.Errorf("thumbnail width %v (%v), want 1..%d", w, err, nativehost.ThumbnailWidth)
		}
		if cap := r.text("#last-shot-caption"); !strings.Contains(cap, "artifacts/") {
			t.Errorf("caption %q", cap)
		}
		// Steps under their numbers, the screenshot's step with its thumbnail.
		groups, _ := r.popup.Locator("#step-list li.group > h3").AllTextContents()
		if len(groups) < 3 || groups[0] != "Step 1" {
			t.Errorf("step numbers %q", groups)
		}
		thumbs, _ := r.popup.Locator("#step-list li.step img").Count()
		shotStep := r.popup.Locator("#step-list li.step", playwright.PageLocatorOptions{HasText: "screenshot"})
		if n, _ := shotStep.Locator("img").Count(); thumbs != 1 || n != 1 {
			t.Errorf("%d thumbnails, %d on the screenshot's step; want 1 on it", thumbs, n)
		}
		if reasons, _ := r.popup.Locator("#step-list .reason").AllTextContents(); len(reasons) == 0 || !strings.HasPrefix(reasons[0], "Navigator: ") {
			t.Errorf("the Navigator's reasons: %q", reasons)
		}
		// The capture brought the shop's tab to the front; a page in the
		// background paints no new frame for the dark scheme's screenshot.
		must(t, r.popup.BringToFront())
		a11ytest.RequireClean(t, r.popup, "popup-result")

		// Reopened, the popup shows the goal and the result again.
		must(t, r.popup.Close())
		again, err := b.Context.NewPage()
		must(t, err)
		t.Cleanup(func() { _ = again.Close() })
		_, err = again.Goto(b.PopupURL(b.TabID(t, r.demo)))
		must(t, err)
		r.popup = again
		r.until("the reopened popup shows the result", func() bool { return r.visible("#result") && r.text("#phase") == "ended" })
		if got, _ := again.Locator("#goal").InputValue(); got != goal {
			t.Errorf("goal after reopening %q, want %q", got, goal)
		}
		if s, _ := again.Locator("#outcome").GetAttribute("data-status"); s != "completed" || !r.visible("#last-shot") {
			t.Errorf("reopened: outcome %q, last screenshot shown %v", s, r.visible("#last-shot"))
		}
	})

	// A goal typed but not started is there again when the popup reopens.
	t.Run("DraftKept", func(t *testing.T) {
		demo, err := b.Context.NewPage()
		must(t, err)
		t.Cleanup(func() { _ = demo.Close() })
		_, err = demo.Goto(shop.URL + "/orders")
		must(t, err)
		tab := b.TabID(t, demo)
		popup, err := b.Context.NewPage()
		must(t, err)
		_, err = popup.Goto(b.PopupURL(tab))
		must(t, err)
		r := &popupRun{t: t, b: b, demo: demo, popup: popup}
		r.until("the popup knows its tab", func() bool { return strings.HasPrefix(r.text("#target"), "Runs on") })
		const goal = "a goal I typed and did not start yet"
		must(t, popup.Locator("#goal").Fill(goal))
		_, err = popup.Locator("#preset").SelectOption(playwright.SelectOptionValues{Values: &[]string{"safe"}})
		must(t, err)
		r.until("the worker has the draft", func() bool {
			v, _ := b.Worker.Evaluate(`state.draft.goal + '|' + state.draft.preset`)
			return v == goal+"|safe"
		})
		must(t, popup.Close())
		again, err := b.Context.NewPage()
		must(t, err)
		t.Cleanup(func() { _ = again.Close() })
		_, err = again.Goto(b.PopupURL(tab))
		must(t, err)
		r.popup = again
		r.until("the draft is back", func() bool { v, _ := again.Locator("#goal").InputValue(); return v == goal })
		if v, _ := again.Locator("#preset").InputValue(); v != "safe" {
			t.Errorf("preset %q, want safe", v)
		}
	})

	t.Run("ApprovalAffordances", func(t *testing.T) {
		r := startWithPreset(t, b, "balanced", shop.URL+"/login", "sign in",
			`type "{{secret:SHOP_PASSWORD}}" into "Password"`,
		)
		// The balanced preset asks before the first navigation too.
		r.until("the approval prompt", func() bool { return r.visible("#approval") })
		if strings.HasPrefix(r.text("#ap-action"), "navigate") {
			must(t, r.popup.Locator("#approve").Click())
			r.until("the type's approval", func() bool { return r.visible("#approval") && strings.HasPrefix(r.text("#ap-action"), "type") })
		}
		approve, deny := r.popup.Locator("#approve"), r.popup.Locator("#deny")
		ac, _ := approve.GetAttribute("class")
		dc, _ := deny.GetAttribute("class")
		abg, _ := approve.Evaluate("(b) => getComputedStyle(b).backgroundColor", nil)
		dbg, _ := deny.Evaluate("(b) => getComputedStyle(b).backgroundColor", nil)
		if ac != "btn-primary" || dc != "btn-danger" || abg == dbg {
			t.Errorf("approve %q (%v), deny %q (%v): want distinct primary and danger buttons", ac, abg, dc, dbg)
		}
		if cd := r.text("#ap-countdown"); !regexp.MustCompile(`^Answer within \d+:\d\d, or it is denied\.$`).MatchString(cd) {
			t.Errorf("countdown %q", cd)
		}
		if v := r.text("#ap-values"); !strings.Contains(v, "text: {{secret:SHOP_PASSWORD}}") {
			t.Errorf("values %q, want the placeholder", v)
		}
		if tg := r.text("#ap-target"); !strings.Contains(tg, `type="password"`) {
			t.Errorf("element %q", tg)
		}
		if body, _ := r.popup.Locator("body").TextContent(); strings.Contains(body, shopPassword) {
			t.Error("the popup shows the secret's value")
		}
		// Checked as a person answers it: the buttons take clicks (750 ms
		// after the prompt showed).
		r.until("Approve and Deny take clicks", func() bool {
			a, _ := approve.IsEnabled()
			d, _ := deny.IsEnabled()
			return a && d
		})
		must(t, r.popup.BringToFront())
		a11ytest.RequireClean(t, r.popup, "popup-approval")
		must(t, deny.Click())
		status, dir := r.ended()
		if status == contract.SessionCompleted {
			t.Fatal("a denied action completed the session")
		}
		verify(t, dir, "")
	})

	t.Run("OptionsRoundTrip", func(t *testing.T) {
		opts, err := b.Context.NewPage()
		must(t, err)
		t.Cleanup(func() { _ = opts.Close() })
		_, err = opts.Goto("chrome-extension://" + b.ExtensionID + "/options.html")
		must(t, err)
		r := &popupRun{t: t, b: b, popup: opts}
		r.until("the settings load", func() bool { return r.text("#path") == b.ConfigPath })
		if got := r.text("#key-state"); got != "(not set)" {
			t.Errorf("key state %q", got)
		}
		a11ytest.RequireClean(t, opts, "options")

		// Bad input: a clear error, the file unchanged.
		before := readFile(t, b.ConfigPath)
		must(t, opts.Locator("#model").Fill(""))
		must(t, opts.Locator("#baseUrl").Fill("http://127.0.0.1:1/v1"))
		must(t, opts.Locator("#save").Click())
		r.until("the error", func() bool { return r.visible("#error") })
		if e := r.text("#error"); !strings.Contains(e, "model.model is required") {
			t.Errorf("error %q", e)
		}
		if readFile(t, b.ConfigPath) != before {
			t.Error("a refused setting changed the file")
		}
		a11ytest.RequireClean(t, opts, "options-error")

		// Good input: written by the host, the key never sent back.
		const key = "sk-test-0123456789abcdef"
		must(t, opts.Locator("#model").Fill("test-model"))
		must(t, opts.Locator("#apiKey").Fill(key))
		must(t, opts.Locator("#save").Click())
		r.until("saved", func() bool { return strings.HasPrefix(r.text("#status"), "Saved") })
		var cfg nativehost.Config
		must(t, json.Unmarshal([]byte(readFile(t, b.ConfigPath)), &cfg))
		if cfg.Model == nil || cfg.Model.Model != "test-model" || cfg.Model.BaseURL != "http://127.0.0.1:1/v1" || cfg.Model.APIKey != key || cfg.Secrets["SHOP_PASSWORD"].Value != shopPassword {
			t.Errorf("the file holds model %+v, secrets kept %v", cfg.Model, cfg.Secrets["SHOP_PASSWORD"].Value == shopPassword)
		}
		if got := r.text("#key-state"); got != "(set)" {
			t.Errorf("key state %q", got)
		}
		if v, _ := opts.Locator("#apiKey").InputValue(); v != "" {
			t.Error("the key field still holds the key")
		}
		html, _ := opts.Content()
		if strings.Contains(html, key) {
			t.Error("the page holds the key")
		}
		// Read afresh (a new host process): the key is only "set".
		_, err = opts.Reload()
		must(t, err)
		r.until("the settings load", func() bool { return r.text("#path") == b.ConfigPath })
		if v, _ := opts.Locator("#model").InputValue(); v != "test-model" || r.text("#key-state") != "(set)" {
			t.Errorf("reloaded: model %q, key %q", v, r.text("#key-state"))
		}
		// Another base URL without the key: refused (the key goes only
		// where it was saved for).
		must(t, opts.Locator("#baseUrl").Fill("http://127.0.0.1:2/v1"))
		must(t, opts.Locator("#save").Click())
		r.until("the error", func() bool { return r.visible("#error") })
		if e := r.text("#error"); !strings.Contains(e, "enter the API key again") {
			t.Errorf("error %q", e)
		}
	})

	// A configuration file a person got wrong: the popup says why once, in
	// words, and the options page repairs it.
	t.Run("BrokenConfig", func(t *testing.T) {
		good := readFile(t, b.ConfigPath)
		var raw map[string]any
		must(t, json.Unmarshal([]byte(good), &raw))
		raw["model"] = "gpt-4o"
		bad, _ := json.Marshal(raw)
		must(t, os.WriteFile(b.ConfigPath, bad, 0o600))
		r := startFromPopup(t, b, shop.URL+"/form", "read my orders")
		r.until("the error", func() bool { return r.visible("#error") })
		e := r.text("#error")
		if !strings.Contains(e, `"model" must be an object`) || strings.Contains(e, "Go struct") || strings.Count(r.text("body"), `"model" must be`) != 1 {
			t.Errorf("error %q; notices %q", e, r.text("#notices"))
		}
		a11ytest.RequireClean(t, r.popup, "popup-error")
		opts, err := b.Context.NewPage()
		must(t, err)
		t.Cleanup(func() { _ = opts.Close() })
		_, err = opts.Goto("chrome-extension://" + b.ExtensionID + "/options.html")
		must(t, err)
		o := &popupRun{t: t, b: b, popup: opts}
		o.until("the file's error", func() bool { return o.visible("#error") })
		if e := o.text("#error"); !strings.Contains(e, `"model" must be an object`) {
			t.Errorf("options error %q", e)
		}
		must(t, opts.Locator("#model").Fill("test-model"))
		must(t, opts.Locator("#save").Click())
		o.until("saved", func() bool { return strings.HasPrefix(o.text("#status"), "Saved") })
		if _, err := nativehost.LoadConfig(b.ConfigPath); err != nil {
			t.Errorf("the repaired file does not load: %v", err)
		}
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
