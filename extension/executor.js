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
// Time of use: click, type and select take an "expect", {element,
// sensitive}: the observer's describe answer for the selector when the
// host judged the action, and the describe options. In the same turn as
// the action, before anything is dispatched, the element the selector
// addresses now is checked against it (the observer's check); any change
// fails with code "target_changed" and nothing is done. A click also
// takes the form submission the host judged for it ({method, url}, or
// null): the submission the click would cause is predicted again in that
// turn, and a different one fails with "target_changed" too.
//
// submission(sel) predicts the form submission a click on sel would cause
// (the submit control under the element's centre and its form): the
// method, the action URL without query, and the names of the form's
// fields, never their values; {"ok": true, "submit": null} when none.
//
// The text of a type action is never put into an answer or an error.
//
// maskRects(opts) answers the observer's maskRects: the boxes the host
// paints over on a screenshot (driver/mask.go), asked for right before
// and right after the capture.
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
  // navigation. Page handlers run between the events, so before each of
  // pointerup, mouseup and click the observer's onTop is asked whether
  // the judged element is still in the page, on top at its centre, and
  // holds the element the events go to, and, before the click, whether
  // it still has the facts it had when armed: when the page
  // covered, moved or removed the element, or moved the event target out
  // of it, after the press, the rest is not dispatched and the answer's
  // note says so (the click, which reached the element, succeeded); when
  // the element's facts changed (a press handler rewrote its caption or
  // its type), nothing more is dispatched and the click fails
  // target_changed.
  function click(sel, expect, judged) {
    const changed = recheck(sel, expect);
    if (changed) return changed;
    if (judged !== undefined) {
      const now = predict(sel);
      if (now.fail) return now.fail;
      if (!sameSubmit(now.submit, judged)) return fail('target_changed', 'the form submission the click would cause changed since it was judged', true);
    }
    const p = JSON.parse(api.prepareClick(sel, expect || null));
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
    // The rest of the click after the press, each step asked for first.
    const rest = [
      ['pointerup', () => new root.PointerEvent('pointerup', Object.assign({ buttons: 0 }, pointer))],
      ['mouseup', () => new root.MouseEvent('mouseup', Object.assign({ buttons: 0, detail: 1 }, common))],
      ['click', () => new root.MouseEvent('click', Object.assign({ buttons: 0, detail: 1 }, common))],
    ];
    let withheld = '';
    let after = 'mousedown';
    try {
      target.dispatchEvent(new root.PointerEvent('pointerdown', Object.assign({ buttons: 1 }, pointer)));
      target.dispatchEvent(new root.MouseEvent('mousedown', Object.assign({ buttons: 1, detail: 1 }, common)));
      // The press reached the element: the click is a success. A page that
      // covered, moved or removed it meanwhile gets nothing more, as the
      // guard stops the rest of a real click there (finishClick's note).
      withheld = api.onTop(p.x, p.y, target);
      if (!withheld) {
        let f = target;
        let guard = 0;
        while (f && !focusable(f) && guard++ < 256) f = composedParent(f);
        if (f && f.isConnected) { try { f.focus({ preventScroll: true }); } catch (e) { /* ignore */ } }
        for (const [type, make] of rest) {
          withheld = api.onTop(p.x, p.y, target, type);
          if (withheld) break;
          target.dispatchEvent(make());
          after = type;
        }
      }
    } catch (e) {
      api.finishClick();
      return fail('internal', 'the click could not be dispatched: ' + (e && e.message));
    }
    const f = JSON.parse(api.finishClick(withheld, after));
    if (!f.ok) return JSON.stringify(f);
    const r = { ok: true, navigating: !!f.navigating, download: !!f.download };
    if (f.note) r.note = String(f.note);
    return JSON.stringify(r);
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
  // time, colour and range inputs get their value set instead. With
  // secret (the host's action had Redact: the text is a secret), the
  // observer taints the element right before the text goes in (its
  // checkFocus or setValue), so that every later observation masks it.
  function type(sel, text, expect, secret) {
    text = String(text);
    secret = secret === true;
    const changed = recheck(sel, expect);
    if (changed) return changed;
    const p = JSON.parse(api.prepareType(sel));
    if (!p.ok) return JSON.stringify(p);
    if (p.mode === 'value') return api.setValue(sel, text, null, secret);
    if (secret) {
      const f = JSON.parse(api.checkFocus(sel, null, true));
      if (!f.ok) return JSON.stringify(f);
    }
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
    // checkFocus armed the observer: every element the input went to is
    // tainted; typed disarms it and fails if that was another one.
    if (secret && text !== '') return api.typed(sel, null);
    return JSON.stringify({ ok: true });
  }

  function select(sel, value, expect) {
    const changed = recheck(sel, expect);
    if (changed) return changed;
    return api.select(sel, value);
  }

  // recheck returns null when sel addresses the element the host judged
  // (expect.element), else the failure answer: target_changed, or the
  // observer's own failure (element_not_found...) to be waited out.
  function recheck(sel, expect) {
    if (!expect || typeof expect !== 'object' || !expect.element || typeof expect.element !== 'object') return null;
    let r;
    try {
      r = api.check(sel, expect);
      if (typeof r === 'string') r = JSON.parse(r);
    } catch (e) {
      return fail('target_changed', 'the target could not be checked: ' + (e && e.message), true);
    }
    if (!r || typeof r !== 'object') return fail('target_changed', 'the target could not be checked', true);
    const changed = Array.isArray(r.changed) ? r.changed.map(String) : [];
    if (changed.length) return fail('target_changed', 'the target changed since the decision: ' + changed.slice(0, 16).join(', '), true);
    if (r.ok === false) {
      if (typeof r.code === 'string' && r.code !== 'target_changed') return JSON.stringify(r);
      return fail('target_changed', String(r.msg || 'the target changed since the decision'), true);
    }
    return null;
  }

  const SUBMIT_INPUTS = new Set(['submit', 'image']);
  const MAX_FIELDS = 64;

  // submitterOf returns the submit control that a click on el activates
  // (el or its closest button or submit input), or null.
  function submitterOf(el) {
    let n = el;
    let guard = 0;
    while (n && guard++ < 256) {
      const t = lname(n);
      if (t === 'button') return String(n.type || '').toLowerCase() === 'submit' ? n : null;
      if (t === 'input') return SUBMIT_INPUTS.has(String(n.type || '').toLowerCase()) ? n : null;
      if (t === 'a' || t === 'select' || t === 'textarea' || t === 'label' || t === 'form') return null;
      n = composedParent(n);
    }
    return null;
  }

  // predict returns {submit} (null when the click submits nothing) or
  // {fail: answer} when the element is not clickable.
  function predict(sel) {
    const p = JSON.parse(api.prepareClick(sel));
    if (!p.ok) return { fail: JSON.stringify(p) };
    const hit = deepHit(p.x, p.y);
    api.finishClick();
    const s = hit && submitterOf(hit.el);
    const form = s && s.form;
    if (!form) return { submit: null };
    const method = String(s.hasAttribute('formmethod') ? s.formMethod : form.method).toUpperCase();
    if (method === 'DIALOG') return { submit: null };
    let url = '';
    try {
      const u = new URL(s.hasAttribute('formaction') ? s.formAction : form.action);
      url = u.origin + u.pathname;
    } catch (e) { url = ''; }
    const names = new Set();
    const els = form.elements;
    for (let i = 0; i < els.length && names.size < MAX_FIELDS; i++) {
      const c = els[i];
      const nm = c.getAttribute && c.getAttribute('name');
      if (!nm || c.disabled) continue;
      const t = lname(c), ty = String(c.type || '').toLowerCase();
      if ((t === 'button' || (t === 'input' && (SUBMIT_INPUTS.has(ty) || ty === 'reset' || ty === 'button'))) && c !== s) continue;
      names.add(String(nm).slice(0, 256));
    }
    return { submit: { method, url, fields: Array.from(names).sort() } };
  }

  // sameSubmit: the click would send what was judged: the same method,
  // URL and field names (a page adding a field between the judgement and
  // the click changes what is sent).
  function sameSubmit(a, b) {
    if (!a || !b) return !a && !b;
    const fa = Array.isArray(a.fields) ? a.fields : [], fb = Array.isArray(b.fields) ? b.fields : [];
    return a.method === b.method && a.url === b.url && fa.length === fb.length && fa.every((f, i) => f === fb[i]);
  }

  function submission(sel) {
    const r = predict(sel);
    if (r.fail) return r.fail;
    return JSON.stringify({ ok: true, submit: r.submit });
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
    maskRects: (o) => api.maskRects(o),
    select,
    submission,
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
