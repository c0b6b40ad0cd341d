package driver

import (
	"encoding/json"
	"fmt"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
)

// peerRefusal is why the boundary refuses a WebRTC channel.
const peerRefusal = "WebRTC is off"

// peerGuard is the init script that turns WebRTC off in a document of the
// session (every frame, popups and about:blank frames included, before
// their scripts run): it replaces the constructors of peer connections
// with stand-ins that throw NotSupportedError, and counts each attempt in
// the observer of the top-level page (or of its own frame when the top is
// of another origin), which the next observation reports. Nothing of the
// real constructors stays reachable from the document's global: a page
// gets only the stand-ins, and a fresh frame gets them too. The name of
// the observer's global is filled in per session.
const peerGuard = `(function (root, name) {
  'use strict';
  const DOMEx = root.DOMException;
  const apply = Reflect.apply;
  const defineProperty = Object.defineProperty;
  function report() {
    for (const w of [root.top, root]) {
      try {
        const api = w && w[name];
        if (api && typeof api.notePeer === 'function') { apply(api.notePeer, api, []); return; }
      } catch (e) { /* another origin */ }
    }
  }
  for (const ctor of ['RTCPeerConnection', 'webkitRTCPeerConnection', 'RTCDataChannel']) {
    const standIn = function () {
      report();
      throw new DOMEx(%q, 'NotSupportedError');
    };
    try { defineProperty(standIn, 'name', { value: ctor }); } catch (e) { /* ignore */ }
    try {
      defineProperty(root, ctor, { value: standIn, writable: true, configurable: true, enumerable: false });
    } catch (e) {
      try { delete root[ctor]; } catch (e2) { /* ignore */ }
    }
  }
})(globalThis, %s);`

// guardPeers installs peerGuard in every document of the context, unless
// the session allows WebRTC.
func (d *pwDriver) guardPeers(bctx playwright.BrowserContext) error {
	if d.cfg.AllowWebRTC {
		return nil
	}
	name, err := json.Marshal(d.global)
	if err != nil {
		return fmt.Errorf("driver: WebRTC guard: %w", err)
	}
	script := fmt.Sprintf(peerGuard, peerRefusal, name)
	if err := bctx.AddInitScript(playwright.Script{Content: &script}); err != nil {
		return fmt.Errorf("driver: install WebRTC guard: %w", err)
	}
	return nil
}

// reportPeers tells Effects that the page tried to open a peer channel and
// was refused, once per observation that counted n > 0 attempts.
func (d *pwDriver) reportPeers(n int) {
	if n <= 0 || d.cfg.Effects == nil {
		return
	}
	d.cfg.Effects.Refused(contract.Effect{Kind: contract.EffectPeer, Refused: peerRefusal})
}
