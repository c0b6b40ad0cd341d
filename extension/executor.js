// executor.js: the aegis action executor, a content script.
//
// The service worker injects observer.js and then this file into the top
// frame of the session's tab, in the extension's isolated world (the page
// can neither see nor call either), and calls __aegisExec.call(fn, args)
// with chrome.scripting.executeScript. Every answer is a JSON string, of
// the same shape as the observer's: {"ok": true, ...} or {"ok": false,
// "code": "element_not_found" | "ambiguous_selector" | "not_interactable" |
// "unsupported" | "internal", "msg": "...", "count": n, "final": bool}.
//
// Selector semantics are the observer's (resolve, ">>>" into open shadow
// roots and same-origin frames, exactly one element per segment): every
// action goes through the observer's functions (prepareClick, prepareType,
// setValue, select, scroll, extract, rect), so both aegis drivers resolve
// and check elements identically. This file adds only what a content
// script must do itself, where the Playwright driver uses the browser's
// input: the click (pointer and mouse events dispatched at the element's
// centre, after the observer's hit test proved the element is on top
// there) and the typing (the editing command insertText on the focused
// element, else its value setter).
//
// The text of a type action is never put into an answer or an error.
(function (root) {
  'use strict';
  if (Object.prototype.hasOwnProperty.call(root, '__aegisExec')) return;
  const api = root.__aegis;
  if (!api) return; // observer.js must be injected first

  function fail(code, msg, final) {
    return JSON.stringify({ ok: false, code, msg: String(msg).slice(0, 1024), count: 0, final: !!final });
  }

  function lname(el) { return String((el && el.localName) || '').toLowerCase(); }
  const deepHit = api.deepHit;
  const deepActive = api.deepActive;

  function composedParent(n) {
    if (!n) return null;
    if (n.parentNode && n.parentNode.nodeType === 11 && n.parentNode.host) return n.parentNode.host;
    return n.parentElement || null;
  }

  function focusable(el) {
    try {
      if (el.isContentEditable) return true;
      const t = lname(el);
      if ((t === 'input' || t === 'select' || t === 'textarea' || t === 'button') && !el.disabled) return true;
      if ((t === 'a' || t === 'area') && el.hasAttribute('href')) return true;
      const ti = el.getAttribute('tabindex');
      return ti != null && ti.trim() !== '' && Number(ti) >= -1;
    } catch (e) { return false; }
  }

  // click dispatches, at the element's centre, what a mouse click would:
  // pointerdown, mousedown, focus, pointerup, mouseup, click. The click
  // event runs the element's activation behaviour (follow a link, submit a
  // form, toggle a checkbox). The observer's prepareClick has checked the
  // element (visible, enabled, on top at its centre) and armed its
  // navigation watch; finishClick reports whether the click started a
  // navigation.
  function click(sel) {
    const p = JSON.parse(api.prepareClick(sel));
    if (!p.ok) return JSON.stringify(p);
    const hit = deepHit(p.x, p.y);
    if (!hit) {
      api.finishClick();
      return fail('not_interactable', 'nothing is at the element\'s centre');
    }
    const target = hit.el;
    const view = (target.ownerDocument && target.ownerDocument.defaultView) || null;
    const common = {
      bubbles: true, cancelable: true, composed: true, view,
      clientX: hit.x, clientY: hit.y, screenX: p.x, screenY: p.y, button: 0,
    };
    const pointer = Object.assign({ pointerId: 1, pointerType: 'mouse', isPrimary: true }, common);
    try {
      target.dispatchEvent(new root.PointerEvent('pointerdown', Object.assign({ buttons: 1 }, pointer)));
      target.dispatchEvent(new root.MouseEvent('mousedown', Object.assign({ buttons: 1, detail: 1 }, common)));
      let f = target;
      let guard = 0;
      while (f && !focusable(f) && guard++ < 256) f = composedParent(f);
      if (f && f.isConnected) { try { f.focus({ preventScroll: true }); } catch (e) { /* ignore */ } }
      target.dispatchEvent(new root.PointerEvent('pointerup', Object.assign({ buttons: 0 }, pointer)));
      target.dispatchEvent(new root.MouseEvent('mouseup', Object.assign({ buttons: 0, detail: 1 }, common)));
      if (target.isConnected) target.dispatchEvent(new root.MouseEvent('click', Object.assign({ buttons: 0, detail: 1 }, common)));
    } catch (e) {
      api.finishClick();
      return fail('internal', 'the click could not be dispatched: ' + (e && e.message));
    }
    const f = JSON.parse(api.finishClick());
    if (!f.ok) return JSON.stringify(f);
    return JSON.stringify({ ok: true, navigating: !!f.navigating, download: !!f.download });
  }

  function fire(el, type) {
    el.dispatchEvent(new root.Event(type, { bubbles: true, composed: true }));
  }

  function setNative(el, text) {
    const proto = lname(el) === 'textarea' ? root.HTMLTextAreaElement.prototype : root.HTMLInputElement.prototype;
    const d = Object.getOwnPropertyDescriptor(proto, 'value');
    if (d && d.set) d.set.call(el, text); else el.value = text;
    fire(el, 'input');
    fire(el, 'change');
  }

  // type replaces the element's content with text: the observer's
  // prepareType checks, focuses and selects the content; the editing
  // command insertText (or delete, for an empty text) then replaces the
  // selection as typing would, with beforeinput and input events. Date,
  // time, colour and range inputs get their value set instead.
  function type(sel, text) {
    text = String(text);
    const p = JSON.parse(api.prepareType(sel));
    if (!p.ok) return JSON.stringify(p);
    if (p.mode === 'value') return api.setValue(sel, text);
    const el = deepActive(root.document);
    if (!el) return fail('not_interactable', 'the element did not keep the focus');
    const doc = el.ownerDocument || root.document;
    let done = false;
    try {
      done = text === '' ? doc.execCommand('delete', false) : doc.execCommand('insertText', false, text);
    } catch (e) { done = false; }
    const t = lname(el);
    try {
      if (t === 'input' || t === 'textarea') {
        if (el.value !== text) setNative(el, text);
      } else if (!done) {
        el.textContent = text;
        fire(el, 'input');
      }
    } catch (e) {
      return fail('internal', 'typing failed');
    }
    return JSON.stringify({ ok: true });
  }

  // scrollPage scrolls by amount CSS pixels (one viewport for 0) up or down.
  function scrollPage(direction, amount) {
    let a = Number(amount);
    if (!isFinite(a) || a <= 0) a = root.innerHeight || 600;
    return api.scroll(direction === 'up' ? -a : a);
  }

  const FNS = Object.freeze({
    observe: (o) => api.observe(o),
    describe: (sel, o) => api.describe(sel, o),
    rect: (sel) => api.rect(sel),
    select: (sel, value) => api.select(sel, value),
    extract: (kind, sel, o) => api.extract(kind, sel, o),
    split: (sel) => api.split(sel),
    click,
    type,
    scrollPage,
  });

  // call runs one function by name; anything else is unsupported.
  function call(fn, args) {
    if (typeof fn !== 'string' || !Object.prototype.hasOwnProperty.call(FNS, fn)) return fail('unsupported', 'unknown function', true);
    try {
      return FNS[fn].apply(null, Array.isArray(args) ? args : []);
    } catch (e) {
      return fail('internal', 'the executor failed: ' + (e && e.message));
    }
  }

  Object.defineProperty(root, '__aegisExec', {
    value: Object.freeze({ version: '1', call }),
    writable: false, configurable: false, enumerable: false,
  });
})(globalThis);
