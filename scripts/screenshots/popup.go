package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/extension"
	"github.com/aegis-run/aegis/nativehost"
)

// popupResult runs a session from the extension's popup, as a person
// would, and shoots the popup at its end: the result panel (outcome,
// counts, the extracted table, the last screenshot) and the steps with
// their thumbnails. Chromium runs with the extension unpacked from this
// tree and the aegis binary installed as its native host in a scratch
// profile; the demo shop serves on loopback.
func popupResult(ctx context.Context, e *env) ([]byte, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: demosite.Handler()}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	shop := "http://" + ln.Addr().String()

	dir := filepath.Join(e.Work, "popup")
	profile := filepath.Join(dir, "profile")
	extDir := filepath.Join(dir, "extension")
	if err := extension.Unpack(extDir); err != nil {
		return nil, err
	}
	res, err := nativehost.Install(nativehost.InstallOptions{
		Dir: filepath.Join(profile, "NativeMessagingHosts"), ExtensionIDs: []string{extension.ID()}, Executable: e.Aegis,
	})
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "host.json")
	if err := nativehost.SaveConfig(cfgPath, nativehost.Config{Manifests: []string{res.Path}, EvidenceDir: filepath.Join(dir, "evidence")}); err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	env[nativehost.EnvConfig] = cfgPath
	args := append(append([]string{}, driver.DefaultArgs...), "--disable-extensions-except="+extDir, "--load-extension="+extDir)
	bctx, err := e.PW.Chromium.LaunchPersistentContext(profile, playwright.BrowserTypeLaunchPersistentContextOptions{
		ExecutablePath: playwright.String(e.ChromiumPath), Headless: playwright.Bool(true), Args: args, Env: env,
		Viewport: &playwright.Size{Width: 1280, Height: 800}, ColorScheme: playwright.ColorSchemeLight,
	})
	if err != nil {
		return nil, fmt.Errorf("launch Chromium with the extension: %w", err)
	}
	defer bctx.Close()

	tab, err := bctx.NewPage()
	if err != nil {
		return nil, err
	}
	if _, err := tab.Goto(shop + "/form"); err != nil {
		return nil, err
	}
	popup, err := bctx.NewPage()
	if err != nil {
		return nil, err
	}
	base := "chrome-extension://" + extension.ID() + "/popup.html"
	if _, err := popup.Goto(base); err != nil {
		return nil, err
	}
	// The popup's own page has the tabs API: find the shop's tab.
	id, err := popup.Evaluate(`async (url) => { const t = (await chrome.tabs.query({})).find((t) => t.url === url); return t ? t.id : 0; }`, shop+"/form")
	if err != nil {
		return nil, err
	}
	tabID, ok := id.(int)
	if !ok || tabID <= 0 {
		return nil, errors.New("no tab shows the shop")
	}
	if _, err := popup.Goto(fmt.Sprintf("%s?tab=%d", base, tabID)); err != nil {
		return nil, err
	}
	// The popup knows its tab (and filled in its origin).
	if err := popup.Locator("#target", playwright.PageLocatorOptions{HasText: "Runs on"}).WaitFor(); err != nil {
		return nil, err
	}
	if err := popup.Locator("#goal").Fill("Read my orders and keep a picture of them"); err != nil {
		return nil, err
	}
	if err := popup.Locator("#steps").Fill("navigate /orders\nextract table \"Orders\"\nextract screenshot"); err != nil {
		return nil, err
	}
	if err := popup.Locator("#start").Click(); err != nil {
		return nil, err
	}
	// The extension's pages allow no eval: wait with selectors.
	end := popup.Locator("#outcome:not([data-status='running']), #error:not([hidden])").First()
	if err := end.WaitFor(playwright.LocatorWaitForOptions{Timeout: playwright.Float(120000)}); err != nil {
		return nil, fmt.Errorf("the session did not end: %w", err)
	}
	if phase, _ := popup.Locator("#phase").TextContent(); phase != "ended" {
		msg, _ := popup.Locator("#error").TextContent()
		return nil, fmt.Errorf("the session failed: %s", msg)
	}
	// The capture brought the shop's tab to the front: back to the popup.
	if err := popup.BringToFront(); err != nil {
		return nil, err
	}
	// The popup's body (its width is the popup's), not the page around it.
	return popup.Locator("body").Screenshot()
}
