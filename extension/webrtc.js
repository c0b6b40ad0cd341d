// webrtc.js: the WebRTC guard, in the page's main world.
//
// Both aegis drivers turn WebRTC off in the pages of a session with this
// script, unless the session allows it: the Playwright driver adds it as
// an init script of the browser context, and the extension's service
// worker registers it (document_start, every frame, about:blank frames
// included, world MAIN) for the session's allowed origins while a boundary
// with WebRTC off is held. It runs before any page script.
//
// It replaces RTCPeerConnection, webkitRTCPeerConnection and
// RTCDataChannel by stand-ins that throw NotSupportedError. Nothing of the
// real constructors stays reachable from the document's global: a page
// gets only the stand-ins, and a fresh frame gets them too.
//
// Each attempt is reported before the stand-in throws: it dispatches a
// "__aegis_peer_refused" event on the top-level window when this frame
// can reach it (same origin), else on its own window. The observer, in
// the main world (Playwright) or the extension's isolated world, listens
// for it in the capture phase from document_start, before any page
// script could add a listener of its own, counts it, and the next
// observation reports the count (stats.peerRefused), which the driver
// records as a refused peer effect (an attempt in a frame of another
// origin than the top is refused, but only that frame's observer, if
// any, counts it, and observations read the top's). A page that
// dispatches the event itself only gets itself reported; a page cannot
// stop the observer from seeing the event of its own attempt, since the
// observer's listener runs first. The dispatch and the constructors it uses are taken here,
// before page scripts can replace them.
(function (root) {
  'use strict';
  const EVENT = '__aegis_peer_refused';
  const REFUSAL = 'WebRTC is off';
  const apply = Reflect.apply;
  const defineProperty = Object.defineProperty;
  const DOMEx = root.DOMException;
  const Ev = root.Event;
  const dispatch = root.EventTarget && root.EventTarget.prototype.dispatchEvent;
  function report() {
    if (typeof dispatch !== 'function' || typeof Ev !== 'function') return;
    for (const w of [root.top, root]) {
      try {
        if (!w) continue;
        apply(dispatch, w, [new Ev(EVENT)]);
        return;
      } catch (e) { /* another origin */ }
    }
  }
  for (const ctor of ['RTCPeerConnection', 'webkitRTCPeerConnection', 'RTCDataChannel']) {
    const standIn = function () {
      report();
      throw new DOMEx(REFUSAL, 'NotSupportedError');
    };
    try { defineProperty(standIn, 'name', { value: ctor }); } catch (e) { /* ignore */ }
    try {
      defineProperty(root, ctor, { value: standIn, writable: true, configurable: true, enumerable: false });
    } catch (e) {
      try { delete root[ctor]; } catch (e2) { /* ignore */ }
    }
  }
})(globalThis);
