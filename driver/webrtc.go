package driver

import (
	"fmt"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/extension"
)

// peerRefusal is why the boundary refuses a WebRTC channel.
const peerRefusal = "WebRTC is off"

// peerGuardFile is the WebRTC guard both drivers run in the page's main
// world (extension/webrtc.js): it replaces the constructors of peer
// connections with stand-ins that throw NotSupportedError and signals each
// attempt to the observer, which counts it for the next observation
// (stats.peerRefused). The extension registers it for the session's
// origins; the Playwright driver adds it as an init script.
const peerGuardFile = "webrtc.js"

// guardPeers installs the WebRTC guard in every document of the context
// (every frame, popups and about:blank frames included, before their
// scripts run), unless the session allows WebRTC.
func (d *pwDriver) guardPeers(bctx playwright.BrowserContext) error {
	if d.cfg.AllowWebRTC {
		return nil
	}
	b, err := extension.ReadFile(peerGuardFile)
	if err != nil {
		return fmt.Errorf("driver: WebRTC guard: %w", err)
	}
	script := string(b)
	if err := bctx.AddInitScript(playwright.Script{Content: &script}); err != nil {
		return fmt.Errorf("driver: install WebRTC guard: %w", err)
	}
	return nil
}

// reportPeers tells effects that the page tried to open a peer channel and
// was refused, once per observation that counted n > 0 attempts (both
// drivers call it with the observation's stats.peerRefused).
func reportPeers(effects Effects, n int) {
	if n <= 0 || effects == nil {
		return
	}
	effects.Refused(contract.Effect{Kind: contract.EffectPeer, Refused: peerRefusal})
}
