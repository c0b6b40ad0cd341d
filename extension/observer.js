// observer.js: the one aegis page observer.
//
// Both aegis drivers see pages through this file: the Chrome extension loads
// it as an MV3 content script, and the Playwright driver injects it into
// every frame (as an init script, before any page script runs) and calls it
// with page.evaluate. Plain JavaScript, no build step, no dependencies.
//
// It installs one frozen, non-writable, non-configurable global object (named
// "__aegis" by default; the Playwright driver renames it per session so that
// a page can neither predict nor pre-empt it). Every function of that object
// returns a JSON string (observePacked a promise of one, maybe compressed),
// which the Go side parses strictly:
//
//   observe(opts)                  the page part of a BrowserObservation
//   observePacked(opts)            the same, compressed (a promise; see below)
//   describe(selector)             the one element a selector resolves to
//   prepareClick(selector)         check, scroll into view, hit-test, arm
//   finishClick()                  did the trusted click reach the element?
//   prepareType(selector)          check, focus and select the contents
//   setValue(selector, text)       set the value of date/time/color/range inputs
//   select(selector, value)        choose an option by value, else by label
//   scroll(dy)                     scroll the page by dy CSS pixels
//   extract(kind, selector, opts)  text, table rows, or links
//   rect(selector)                 the element's box in top-level viewport px
//   split(selector)                the selector's segments (for tests)
//
// Selector syntax: a selector is one or more CSS selectors joined by ">>>".
// The first segment is matched in the top document; each ">>>" enters the
// element the previous segment matched: its open shadow root, or, for an
// <iframe> or <frame>, its same-origin document. Every segment must match
// exactly one element in its scope: zero is element_not_found, several is
// ambiguous_selector, never a guess. ">>>" inside quotes, brackets,
// parentheses or after a backslash does not split.
//
// Masking: values of sensitive fields (password inputs, autocomplete
// cc-*, one-time-code, current-password and new-password, names that look
// like secrets, and whatever matches the policy's sensitive selectors) are
// replaced by "[masked]" in the snapshot and never reach the text, the
// affordances or an extraction. This happens here, in the page, before
// anything leaves it.
(function (root, name) {
  'use strict';
  if (Object.prototype.hasOwnProperty.call(root, name)) return;

  const VERSION = '1';
  const MASK = '[masked]';
  const TEXT_MARKER = '\n[aegis: text truncated]';
  const SNAP_MARKER = '#truncated';
  const SPLIT = '>>>';
  const MAX_SELECTOR_INPUT = 4096;
  const MAX_SEGMENTS = 32;

  // Defaults and hard ceilings (the schema's maxima). The Go side sends its
  // own values; these keep the observer safe when called directly.
  const LIMITS = {
    maxElements: [50000, 200000],
    maxDepth: [256, 1024],
    maxTextChars: [262144, 1048576],
    maxSnapshotChars: [1048576, 4194304],
    maxAffordances: [2000, 5000],
    maxAffordanceText: [200, 2000],
    maxSelector: [512, 2048],
    maxAttr: [512, 4096],
    maxTextNode: [4096, 65536],
  };
  // Structural selectors are unique by construction (anchored at :root or
  // at an id counted once, then child steps that each pick one child). The
  // ones anchored at the top of a shadow root rely on :not(* > *) and are
  // also checked with querySelectorAll when their root has at most this many
  // elements.
  const VERIFY_BELOW = 10000;

  const apply = Reflect.apply;
  let origAdd = null, origRemove = null;
  const now = () => (root.performance && root.performance.now ? root.performance.now() : Date.now());

  // ---------------------------------------------------------------------
  // Click listeners added by page scripts. In the page's main world (the
  // Playwright driver) this sees every addEventListener; in an isolated
  // world it sees nothing and costs nothing.
  const listened = new WeakSet();
  const CLICK_EVENTS = new Set(['click', 'dblclick', 'auxclick', 'mousedown', 'mouseup',
    'pointerdown', 'pointerup', 'touchstart', 'touchend']);
  try {
    const proto = root.EventTarget && root.EventTarget.prototype;
    const orig = proto && proto.addEventListener;
    origRemove = proto && proto.removeEventListener;
    if (typeof orig === 'function') {
      origAdd = orig;
      const wrapped = {
        addEventListener(type, listener, options) {
          try {
            if (CLICK_EVENTS.has(type) && this && this.nodeType === 1) listened.add(this);
          } catch (e) { /* hostile getter: ignore */ }
          return apply(orig, this, arguments);
        },
      }.addEventListener;
      Object.defineProperty(proto, 'addEventListener', {
        value: wrapped, writable: true, configurable: true, enumerable: true,
      });
    }
  } catch (e) { /* frozen prototype: no listener detection */ }

  // In the extension's isolated world the page's own addEventListener
  // calls are not seen above. There, listeners.js (in the page's main
  // world) remembers them and answers a cancelable query event dispatched
  // on the element by cancelling it. Off in the page's main world (the
  // Playwright driver), where chrome.runtime.id does not exist.
  const LISTENER_QUERY = '__aegis_listener_query';
  let isolatedWorld = false;
  try {
    isolatedWorld = !!(root.chrome && root.chrome.runtime && typeof root.chrome.runtime.id === 'string');
  } catch (e) { isolatedWorld = false; }
  function mainWorldListener(el) {
    try {
      return !el.dispatchEvent(new root.CustomEvent(LISTENER_QUERY, { cancelable: true, bubbles: false, composed: false }));
    } catch (e) { return false; }
  }

  function hasClickListener(el) {
    if (listened.has(el)) return true;
    if (isolatedWorld && mainWorldListener(el)) return true;
    try {
      const win = el.ownerDocument && el.ownerDocument.defaultView;
      if (win && win !== root) {
        const other = win[name];
        if (other && typeof other.hasClickListener === 'function') return other.hasClickListener(el);
      }
    } catch (e) { /* cross-origin */ }
    return false;
  }

  // ---------------------------------------------------------------------
  // Options.

  function num(v, lim) {
    const [def, max] = lim;
    if (typeof v !== 'number' || !isFinite(v) || v <= 0) return def;
    return Math.min(Math.floor(v), max);
  }

  function normOpts(o) {
    o = o && typeof o === 'object' ? o : {};
    const out = {};
    for (const k of Object.keys(LIMITS)) out[k] = num(o[k], LIMITS[k]);
    out.sensitive = Array.isArray(o.sensitive) ? o.sensitive.filter((s) => typeof s === 'string' && s.length > 0 && s.length <= 2048).slice(0, 256) : [];
    return out;
  }

  // ---------------------------------------------------------------------
  // Small helpers.

  class Fail extends Error {
    // final marks a failure that waiting cannot cure (wrong kind of
    // element, invalid selector, missing option).
    constructor(code, msg, count, final) {
      super(msg);
      this.code = code;
      this.count = count || 0;
      this.final = !!final;
    }
  }

  function result(fn) {
    try {
      const v = fn();
      return JSON.stringify(Object.assign({ ok: true }, v));
    } catch (e) {
      if (e instanceof Fail) return JSON.stringify({ ok: false, code: e.code, msg: cut(e.message, 1024), count: e.count, final: e.final });
      return JSON.stringify({ ok: false, code: 'internal', msg: cut(String(e && e.message || e), 1024) });
    }
  }

  function cut(s, n) {
    s = String(s);
    if (s.length <= n) return s;
    // Never split a surrogate pair.
    let end = n;
    const c = s.charCodeAt(end - 1);
    if (c >= 0xd800 && c <= 0xdbff) end--;
    return s.slice(0, end);
  }

  const WS = /[\s\u00a0\u200b\ufeff]+/g;
  function norm(s) { return String(s).replace(WS, ' ').trim(); }

  function isElement(n) { return n && n.nodeType === 1; }
  function winOf(el) { return (el.ownerDocument && el.ownerDocument.defaultView) || root; }
  function styleOf(el) {
    try { return winOf(el).getComputedStyle(el); } catch (e) { return null; }
  }
  function lname(el) { return String(el.localName || '').toLowerCase(); }
  function attr(el, a) {
    try { const v = el.getAttribute(a); return v == null ? null : String(v); } catch (e) { return null; }
  }
  function isFrame(el) { const t = lname(el); return t === 'iframe' || t === 'frame'; }
  function frameDoc(el) {
    try { return el.contentDocument || null; } catch (e) { return null; }
  }
  function short(el) {
    if (!isElement(el)) return 'node';
    let s = '<' + lname(el);
    const id = attr(el, 'id');
    if (id) s += ' id="' + cut(id, 40) + '"';
    return s + '>';
  }

  // ---------------------------------------------------------------------
  // Selector syntax.

  function isCssSpace(c) { return c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f'; }
  function trimCss(s) {
    let a = 0, b = s.length;
    while (a < b && isCssSpace(s[a])) a++;
    while (b > a && isCssSpace(s[b - 1])) b--;
    return s.slice(a, b);
  }

  // split cuts a selector into its segments. It mirrors driver.ParseSelector
  // in Go, byte for byte on ASCII.
  function split(sel) {
    if (typeof sel !== 'string') throw new Fail('element_not_found', 'invalid selector: not a string', 0, true);
    if (sel.length > MAX_SELECTOR_INPUT) throw new Fail('element_not_found', 'invalid selector: too long', 0, true);
    const segs = [];
    let start = 0, quote = '', brackets = 0, parens = 0, i = 0;
    while (i < sel.length) {
      const c = sel[i];
      if (c === '\\') { i += 2; continue; }
      if (quote) { if (c === quote) quote = ''; i++; continue; }
      if (c === '"' || c === "'") { quote = c; i++; continue; }
      if (c === '[') brackets++;
      else if (c === ']') { if (brackets > 0) brackets--; }
      else if (c === '(') parens++;
      else if (c === ')') { if (parens > 0) parens--; }
      else if (c === '>' && brackets === 0 && parens === 0 && sel.startsWith(SPLIT, i)) {
        segs.push(sel.slice(start, i));
        i += SPLIT.length;
        start = i;
        continue;
      }
      i++;
    }
    if (quote) throw new Fail('element_not_found', 'invalid selector: unterminated string', 0, true);
    segs.push(sel.slice(start));
    const out = segs.map(trimCss);
    if (out.some((s) => s === '')) throw new Fail('element_not_found', 'invalid selector: empty segment', 0, true);
    if (out.length > MAX_SEGMENTS) throw new Fail('element_not_found', 'invalid selector: more than ' + MAX_SEGMENTS + ' segments', 0, true);
    return out;
  }

  // resolve returns the one element the selector addresses.
  function resolve(sel) {
    const segs = split(sel);
    let scope = root.document;
    let el = null;
    for (let i = 0; i < segs.length; i++) {
      let list;
      try {
        list = scope.querySelectorAll(segs[i]);
      } catch (e) {
        throw new Fail('element_not_found', 'invalid selector: segment ' + (i + 1) + ' is not valid CSS', 0, true);
      }
      const where = segs.length > 1 ? ' (segment ' + (i + 1) + ' of ' + segs.length + ')' : '';
      if (list.length === 0) throw new Fail('element_not_found', 'no element matches' + where);
      if (list.length > 1) throw new Fail('ambiguous_selector', list.length + ' elements match' + where, list.length);
      el = list[0];
      if (i < segs.length - 1) {
        if (isFrame(el)) {
          const d = frameDoc(el);
          if (!d) throw new Fail('element_not_found', 'segment ' + (i + 1) + ' is a frame whose document is not reachable (cross-origin or not loaded)');
          scope = d;
        } else if (el.shadowRoot) {
          scope = el.shadowRoot;
        } else {
          throw new Fail('element_not_found', 'segment ' + (i + 1) + ' has no open shadow root or frame to enter');
        }
      }
    }
    return el;
  }

  // frameChain returns the frame elements from the top document down to el's
  // document, and el's offset in top-level viewport coordinates.
  function frameOffset(el) {
    let x = 0, y = 0;
    let win = winOf(el);
    let guard = 0;
    while (win && win !== root && guard++ < 64) {
      let fe;
      try { fe = win.frameElement; } catch (e) { fe = null; }
      if (!fe) break;
      const r = fe.getBoundingClientRect();
      const st = styleOf(fe);
      x += r.left + fe.clientLeft + (st ? parseFloat(st.paddingLeft) || 0 : 0);
      y += r.top + fe.clientTop + (st ? parseFloat(st.paddingTop) || 0 : 0);
      win = winOf(fe);
    }
    return { x, y };
  }

  // ---------------------------------------------------------------------
  // Roles, names, sensitivity.

  const TEXT_INPUTS = new Set(['', 'text', 'search', 'email', 'url', 'tel', 'password', 'number']);
  const VALUE_INPUTS = new Set(['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range']);
  const BUTTON_INPUTS = new Set(['button', 'submit', 'reset', 'image']);
  const INTERACTIVE_ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'switch', 'tab', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'option', 'combobox', 'textbox', 'searchbox', 'slider',
    'spinbutton', 'treeitem', 'listbox', 'gridcell']);

  function inputType(el) { return String(attr(el, 'type') || '').toLowerCase().trim(); }

  function roleOf(el) {
    const explicit = attr(el, 'role');
    if (explicit && norm(explicit)) return norm(explicit).split(' ')[0].toLowerCase();
    const t = lname(el);
    switch (t) {
      case 'a': case 'area': return attr(el, 'href') != null ? 'link' : '';
      case 'button': case 'summary': return 'button';
      case 'select': return (el.multiple || (el.size || 0) > 1) ? 'listbox' : 'combobox';
      case 'textarea': return 'textbox';
      case 'option': return 'option';
      case 'img': return 'img';
      case 'table': return 'table';
      case 'input': {
        const ty = inputType(el);
        if (ty === 'checkbox') return 'checkbox';
        if (ty === 'radio') return 'radio';
        if (ty === 'range') return 'slider';
        if (ty === 'number') return 'spinbutton';
        if (ty === 'search') return 'searchbox';
        if (BUTTON_INPUTS.has(ty)) return 'button';
        if (ty === 'hidden' || ty === 'file' || VALUE_INPUTS.has(ty)) return '';
        return 'textbox';
      }
    }
    if (isEditable(el)) return 'textbox';
    return '';
  }

  function isEditable(el) {
    try { return el.isContentEditable === true && (el.parentElement ? !el.parentElement.isContentEditable : true); } catch (e) { return false; }
  }

  function hintOf(el) {
    const t = lname(el);
    if (t === 'select') return 'select';
    if (t === 'textarea') return 'type';
    if (t === 'input') {
      const ty = inputType(el);
      if (TEXT_INPUTS.has(ty) || VALUE_INPUTS.has(ty)) return 'type';
      return 'click';
    }
    if (isEditable(el)) return 'type';
    return 'click';
  }

  const SECRET_NAME = /(pass(word|wd|code|phrase)?|pwd|secret|otp|one[-_ ]?time|totp|2fa|mfa|cvv|cvc|csc|card[-_ ]?(num|no|number)|cc[-_ ]?(num|number)|ssn|security[-_ ]?code|(^|[^a-z])pin([^a-z]|$))/i;

  function autocompleteSensitive(ac) {
    if (!ac) return false;
    for (const tok of ac.toLowerCase().split(/\s+/)) {
      if (tok.startsWith('cc-') || tok === 'one-time-code' || tok === 'current-password' || tok === 'new-password') return true;
    }
    return false;
  }

  function makeSensitive(selectors) {
    for (const s of selectors) {
      try { root.document.createDocumentFragment().querySelector(s); } catch (e) {
        throw new Fail('internal', 'invalid sensitive selector: ' + cut(s, 200));
      }
    }
    return function isSensitive(el) {
      const t = lname(el);
      if (t === 'input') {
        const ty = inputType(el);
        if (ty === 'password') return true;
        // Some pages switch a password field to type=text to show it.
        try { if (el.type === 'password') return true; } catch (e) { /* ignore */ }
      }
      if (t === 'input' || t === 'textarea' || t === 'select' || isEditable(el)) {
        if (autocompleteSensitive(attr(el, 'autocomplete'))) return true;
        const n = (attr(el, 'name') || '') + ' ' + (attr(el, 'id') || '');
        if (SECRET_NAME.test(n)) return true;
      }
      for (const s of selectors) {
        try { if (el.matches(s)) return true; } catch (e) { return true; }
      }
      return false;
    };
  }

  // boundedText collects the visible-ish text of a subtree, stopping at max
  // characters, without ever reading form values.
  function boundedText(el, max, isSensitive) {
    let out = '';
    const stack = [el];
    let guard = 0;
    while (stack.length && out.length < max && guard++ < 5000) {
      const n = stack.pop();
      if (n.nodeType === 3) { out += ' ' + n.data; continue; }
      if (!isElement(n)) continue;
      const t = lname(n);
      if (t === 'script' || t === 'style' || t === 'template' || t === 'noscript') continue;
      if (isSensitive && isSensitive(n)) continue;
      if (t === 'textarea' || t === 'select') continue;
      if (t === 'img') { const alt = attr(n, 'alt'); if (alt) out += ' ' + alt; continue; }
      if (t === 'input') {
        const ty = inputType(n);
        if (BUTTON_INPUTS.has(ty)) out += ' ' + (attr(n, 'value') || attr(n, 'alt') || '');
        continue;
      }
      const kids = n.childNodes;
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
    }
    return cut(norm(out), max);
  }

  function byIds(el, ids, max, isSensitive) {
    const r = el.getRootNode ? el.getRootNode() : el.ownerDocument;
    const parts = [];
    for (const id of ids.split(/\s+/).slice(0, 16)) {
      if (!id) continue;
      let t = null;
      try { t = r.getElementById ? r.getElementById(id) : null; } catch (e) { t = null; }
      if (t) parts.push(attr(t, 'aria-label') || boundedText(t, max, isSensitive));
    }
    return norm(parts.join(' '));
  }

  // accessibleName approximates the accessible name: aria-labelledby,
  // aria-label, labels, alt, value of button inputs, text, placeholder,
  // title. It never reads the value of a text field.
  function accessibleName(el, max, isSensitive) {
    let s = '';
    const lb = attr(el, 'aria-labelledby');
    if (lb) s = byIds(el, lb, max, isSensitive);
    if (!s) s = norm(attr(el, 'aria-label') || '');
    const t = lname(el);
    if (!s && (t === 'input' || t === 'select' || t === 'textarea' || t === 'meter' || t === 'progress')) {
      try {
        if (el.labels && el.labels.length) {
          s = norm(Array.from(el.labels).slice(0, 4).map((l) => boundedText(l, max, isSensitive)).join(' '));
        }
      } catch (e) { /* ignore */ }
      if (!s && t === 'input') {
        const ty = inputType(el);
        if (BUTTON_INPUTS.has(ty)) s = norm(attr(el, 'value') || attr(el, 'alt') || (ty === 'reset' ? 'Reset' : ty === 'submit' ? 'Submit' : ''));
      }
      if (!s) s = norm(attr(el, 'placeholder') || '');
    } else if (!s && t === 'img') {
      s = norm(attr(el, 'alt') || '');
    } else if (!s && !(isSensitive && isSensitive(el))) {
      s = boundedText(el, max, isSensitive);
    }
    if (!s) s = norm(attr(el, 'title') || '');
    return cut(s, max);
  }

  // ---------------------------------------------------------------------
  // Unique selectors.

  // rootInfo counts, once per root (a document or a shadow root), how many
  // elements carry each id, data-testid, tag+name and tag+aria-label, so
  // that uniqueness is decided by exact counting rather than by one
  // querySelectorAll per element.
  function rootInfo(cache, r) {
    let info = cache.get(r);
    if (info) return info;
    const doc = r.nodeType === 9 ? r : r.ownerDocument;
    const quirks = doc && doc.compatMode === 'BackCompat';
    info = { ids: new Map(), testids: new Map(), names: new Map(), labels: new Map(), quirks, total: 0 };
    const inc = (m, k) => m.set(k, (m.get(k) || 0) + 1);
    try {
      info.total = r.querySelectorAll('*').length;
      const list = r.querySelectorAll('[id],[data-testid],[name],[aria-label]');
      for (let i = 0; i < list.length; i++) {
        const e = list[i];
        const id = attr(e, 'id');
        if (id) inc(info.ids, quirks ? id.toLowerCase() : id);
        const tid = attr(e, 'data-testid');
        if (tid != null) inc(info.testids, tid);
        const tag = lname(e);
        const nm = attr(e, 'name');
        if (nm != null) inc(info.names, tag + '\u0000' + nm);
        const al = attr(e, 'aria-label');
        if (al != null) inc(info.labels, tag + '\u0000' + al);
      }
    } catch (e) { /* leave counts empty: only structural paths */ }
    cache.set(r, info);
    return info;
  }

  function cssString(v) { return '"' + root.CSS.escape(v) + '"'; }

  function verified(r, sel, el) {
    try {
      const l = r.querySelectorAll(sel);
      return l.length === 1 && l[0] === el;
    } catch (e) { return false; }
  }

  function uniqueId(el, info) {
    const id = attr(el, 'id');
    if (!id || id.length > 200) return '';
    return info.ids.get(info.quirks ? id.toLowerCase() : id) === 1 ? '#' + root.CSS.escape(id) : '';
  }

  // escTag is CSS.escape for element names, remembered: a page has few.
  const escapedTags = new Map();
  function escTag(t) {
    let e = escapedTags.get(t);
    if (e === undefined) {
      e = root.CSS.escape(t);
      if (escapedTags.size < 1024) escapedTags.set(t, e);
    }
    return e;
  }

  function localSelector(el, r, cache, maxLen) {
    const info = rootInfo(cache, r);
    const cands = [];
    const id = uniqueId(el, info);
    if (id) cands.push(id);
    const tid = attr(el, 'data-testid');
    if (tid && tid.length <= 200 && info.testids.get(tid) === 1) cands.push('[data-testid=' + cssString(tid) + ']');
    const nm = attr(el, 'name');
    if (nm && nm.length <= 200 && info.names.get(lname(el) + '\u0000' + nm) === 1) cands.push(escTag(lname(el)) + '[name=' + cssString(nm) + ']');
    const al = attr(el, 'aria-label');
    if (al && al.length <= 200 && info.labels.get(lname(el) + '\u0000' + al) === 1) cands.push(escTag(lname(el)) + '[aria-label=' + cssString(al) + ']');
    for (const c of cands) if (c.length <= maxLen) return c;
    const p = structural(el, r, info);
    if (p && p.length <= maxLen && (!p.includes(':not(* > *)') || info.total > VERIFY_BELOW || verified(r, p, el))) return p;
    return '';
  }

  // typeIndex numbers, once per parent, each child among the children of
  // its type (what :nth-of-type counts), and counts each type.
  function typeIndex(info, parent) {
    if (!info.types) info.types = new Map();
    let ti = info.types.get(parent);
    if (ti) return ti;
    ti = { idx: new Map(), count: new Map() };
    for (let c = parent.firstElementChild; c; c = c.nextElementSibling) {
      const k = c.namespaceURI + ' ' + c.localName;
      const n = (ti.count.get(k) || 0) + 1;
      ti.count.set(k, n);
      ti.idx.set(c, n);
    }
    info.types.set(parent, ti);
    return ti;
  }

  // structural builds a child-combinator path of :nth-of-type steps, anchored
  // at :root, at the top of a shadow root, or at the nearest ancestor with a
  // unique id. Each step picks exactly one child of the previous one.
  function structural(el, r, info) {
    const parts = [];
    let cur = el;
    let guard = 0;
    while (cur && guard++ < 256) {
      if (cur !== el) {
        const id = uniqueId(cur, info);
        if (id) { parts.unshift(id); return parts.join(' > '); }
      }
      const parent = cur.parentNode;
      if (!parent) return '';
      if (parent.nodeType === 9) { parts.unshift(':root'); return parts.join(' > '); }
      const ti = typeIndex(info, parent);
      const idx = ti.idx.get(cur) || 1;
      const only = ti.count.get(cur.namespaceURI + ' ' + cur.localName) === 1;
      // The only child of its type needs no index.
      const step = escTag(lname(cur)) + (only ? '' : ':nth-of-type(' + idx + ')');
      if (parent === r && r.nodeType === 11) { parts.unshift(step + ':not(* > *)'); return parts.join(' > '); }
      parts.unshift(step);
      cur = parent;
    }
    return '';
  }

  // ---------------------------------------------------------------------
  // observe.

  const SKIP_CONTENT = new Set(['script', 'style', 'template', 'noscript']);
  const SAFE_SENSITIVE_ATTRS = new Set(['type', 'name', 'id', 'autocomplete', 'aria-label', 'placeholder',
    'class', 'role', 'required', 'disabled', 'readonly', 'maxlength', 'minlength', 'data-testid', 'for', 'title']);
  const CHECKABLE = new Set(['checkbox', 'radio']);

  function isCandidate(el, st, tag, parentCursor) {
    switch (tag) {
      case 'a': case 'area': if (attr(el, 'href') != null) return true; break;
      case 'button': case 'select': case 'textarea': case 'summary': return true;
      case 'input': return inputType(el) !== 'hidden';
    }
    const role = attr(el, 'role');
    if (role && INTERACTIVE_ROLES.has(norm(role).split(' ')[0].toLowerCase())) return true;
    if (isEditable(el)) return true;
    const ti = attr(el, 'tabindex');
    if (ti != null && ti.trim() !== '' && Number(ti) >= 0) return true;
    if (attr(el, 'onclick') != null) return true;
    try { if (typeof el.onclick === 'function') return true; } catch (e) { /* ignore */ }
    if (hasClickListener(el)) return true;
    if (st && st.cursor === 'pointer' && parentCursor !== 'pointer') return true;
    return false;
  }

  // Bag makes the snapshot's attribute objects: without Object.prototype
  // in their chain (so no setter or toJSON a page added there applies to
  // them) but, unlike Object.create(null) objects, in V8's fast mode, which
  // makes them quicker to fill and to stringify.
  function Bag() {}
  Bag.prototype = Object.freeze(Object.create(null));

  // sortedMembers returns o, or a copy of it, with its members in the order
  // of their names' UTF-16 code units, RFC 8785's order, so that the
  // snapshot leaves the page in canonical form and the Go side only has to
  // check it. (Integer-like names, which JavaScript always lists first,
  // can defeat this; Go then canonicalizes the snapshot itself.)
  function sortedMembers(o) {
    const keys = Object.keys(o);
    let sorted = true;
    for (let i = 1; i < keys.length; i++) {
      if (keys[i - 1] > keys[i]) { sorted = false; break; }
    }
    if (sorted) return o;
    keys.sort();
    const out = new Bag();
    for (const k of keys) out[k] = o[k];
    return out;
  }

  function observe(o) {
    const t0 = now();
    const opts = normOpts(o);
    const isSensitive = makeSensitive(opts.sensitive);
    const doc = root.document;
    const vw = root.innerWidth || 0, vh = root.innerHeight || 0;
    const cache = new Map();
    const st = {
      walked: 0, walkTruncated: false, tooDeep: 0,
      text: [], textLen: 0, textTruncated: false,
      snapUsed: 0, snapTruncated: false, snapDropped: 0,
      cands: [], masked: 0, frames: 0, crossOriginFrames: 0, shadowRoots: 0,
    };
    const truncatedParents = new Set();

    function pushText(s) {
      if (st.textTruncated) return;
      st.text.push(s);
      st.textLen += s.length;
      if (st.textLen > opts.maxTextChars) st.textTruncated = true;
    }

    function snapAdd(out, item, size) {
      if (!out) return false;
      if (st.snapTruncated || st.snapUsed + size > opts.maxSnapshotChars) {
        st.snapTruncated = true;
        st.snapDropped++;
        if (!truncatedParents.has(out)) {
          truncatedParents.add(out);
          out.push([SNAP_MARKER]);
          st.snapUsed += 16;
        }
        return false;
      }
      st.snapUsed += size;
      out.push(item);
      return true;
    }

    const rootArr = ['#document', { url: cut(doc.URL || '', 2048) }];
    st.snapUsed += 32;
    // The stack holds work items in reverse document order. An item is a
    // node to visit, or a closing marker for an element (end: true).
    const stack = [];
    const topCtx = { root: doc, win: doc.defaultView || root, prefix: '', ox: 0, oy: 0, ok: true };
    const pushChildren = (parent, out, hid, mask, ctx, depth, pcursor, tvis) => {
      const kids = parent.childNodes;
      for (let i = kids.length - 1; i >= 0; i--) stack.push({ n: kids[i], out, hid, mask, ctx, depth, pcursor, tvis });
    };
    pushChildren(doc, rootArr, false, false, topCtx, 0, '', true);

    while (stack.length) {
      const it = stack.pop();
      if (it.end) {
        if (it.block) pushText('\n');
        continue;
      }
      const n = it.n;
      if (n.nodeType === 3) {
        const raw = n.data;
        if (!raw) continue;
        const t = raw.replace(WS, ' ');
        if (t === ' ') continue;
        if (it.mask) { snapAdd(it.out, MASK, 12); continue; }
        if (it.tvis) pushText(t);
        const s = cut(t, opts.maxTextNode);
        snapAdd(it.out, s, s.length + 3);
        continue;
      }
      if (!isElement(n)) continue;
      if (st.walked >= opts.maxElements) { st.walkTruncated = true; break; }
      st.walked++;
      if (it.depth >= opts.maxDepth) { st.tooDeep++; continue; }
      const el = n;
      const tag = lname(el);
      const ctx = it.ctx;

      // Style and visibility.
      let style = null, hid = it.hid, ownVis = false, display = '', cursor = '';
      if (!hid) {
        // ctx.win is the window of every element of ctx.root (styleOf(el)).
        try { style = ctx.win.getComputedStyle(el); } catch (e) { style = null; }
        if (style) {
          display = style.display;
          cursor = style.cursor;
          if (display === 'none' || style.opacity === '0' || style.contentVisibility === 'hidden') hid = true;
          ownVis = !hid && style.visibility === 'visible';
        }
        const p = el.parentElement;
        if (!hid && p && lname(p) === 'details' && !p.open && !(tag === 'summary' && p.querySelector(':scope > summary') === el)) hid = true;
        if (!hid && p && p.shadowRoot && el.assignedSlot === null && el.getRootNode() !== p.shadowRoot) hid = true;
        if (hid) ownVis = false;
      }
      const sens = it.mask || isSensitive(el);
      if (sens) st.masked++;

      // Snapshot entry.
      let arr = null;
      if (it.out) {
        const attrs = new Bag();
        // Names set so far, in order: while each is above the one before,
        // the members are in canonical order already.
        let last = '', sorted = true;
        let size = tag.length + 8;
        const list = el.attributes;
        for (let i = 0; i < list.length && i < 64; i++) {
          const a = list[i];
          const an = a.name;
          if (an.length > 128 || an[0] === '$' || (an[0] === 'o' && an[1] === 'n')) continue;
          if (sens && !SAFE_SENSITIVE_ATTRS.has(an)) {
            if (an === 'value') {
              attrs.value = MASK; size += 16;
              if (!(last < an)) sorted = false;
              last = an;
            }
            continue;
          }
          const v = cut(a.value, opts.maxAttr);
          attrs[an] = v;
          size += an.length + v.length + 6;
          if (!(last < an)) sorted = false;
          last = an;
        }
        // $checked, $value and $hidden are set last: sortedMembers puts
        // them in their place.
        let extra = false;
        if (tag === 'input' || tag === 'textarea' || tag === 'select') {
          const ty = inputType(el);
          if (tag === 'input' && CHECKABLE.has(ty)) {
            attrs.$checked = el.checked ? 'true' : 'false';
            extra = true;
          } else if (!(tag === 'input' && (BUTTON_INPUTS.has(ty) || ty === 'file'))) {
            let v = '';
            try { v = String(el.value == null ? '' : el.value); } catch (e) { v = ''; }
            attrs.$value = sens ? (v ? MASK : '') : cut(v, opts.maxAttr);
            extra = true;
          }
          size += 24;
        }
        if (hid) { attrs.$hidden = 'true'; size += 16; extra = true; }
        arr = [tag, sorted && !extra ? attrs : sortedMembers(attrs)];
        if (!snapAdd(it.out, arr, size)) arr = null;
      }

      // Text.
      const block = ownVis && display && !display.startsWith('inline') && display !== 'contents';
      if (block) pushText('\n');
      if (ownVis && !sens) {
        if (tag === 'select') {
          try {
            const o2 = el.selectedOptions && el.selectedOptions[0];
            if (o2) pushText(' ' + norm(o2.label || o2.text || '') + ' ');
          } catch (e) { /* ignore */ }
        } else if (tag === 'input' && BUTTON_INPUTS.has(inputType(el))) {
          pushText(' ' + norm(attr(el, 'value') || '') + ' ');
        } else if (tag === 'img') {
          const alt = attr(el, 'alt');
          if (alt) pushText(' ' + norm(alt) + ' ');
        }
      }

      // Affordance candidate.
      if (!hid && ownVis && ctx.ok && isCandidate(el, style, tag, it.pcursor)) {
        st.cands.push({ el, ctx, order: st.cands.length, sens });
      }

      // Children.
      if (block) stack.push({ end: true, block: true });
      if (SKIP_CONTENT.has(tag) || tag === 'select' || tag === 'option') continue;
      const childTvis = !hid && !sens && tag !== 'textarea';
      // childTvis is refined per child element by its own style; text nodes
      // use the parent's own visibility.
      const textVis = childTvis && ownVis;
      const childMask = sens;
      if (isFrame(el)) {
        const fd = frameDoc(el);
        if (fd && fd.documentElement) {
          st.frames++;
          const farr = ['#document', { url: cut(fd.URL || '', 2048) }];
          if (arr) { arr.push(farr); st.snapUsed += 32; }
          let prefix = '', ok = ctx.ok;
          if (ok) {
            const s = localSelector(el, ctx.root, cache, opts.maxSelector);
            if (s) prefix = ctx.prefix + s + ' ' + SPLIT + ' '; else ok = false;
          }
          const off = frameOffset(fd.documentElement);
          pushChildren(fd, arr ? farr : null, hid, childMask, { root: fd, win: fd.defaultView || root, prefix, ox: off.x, oy: off.y, ok }, it.depth + 1, '', !hid && !sens);
        } else if (arr) {
          st.crossOriginFrames++;
          arr[1].$frame = 'not reachable';
          arr[1] = sortedMembers(arr[1]);
        }
        continue;
      }
      if (el.shadowRoot) {
        st.shadowRoots++;
        const sr = el.shadowRoot;
        const sarr = ['#shadow-root', { mode: 'open' }];
        if (arr) { arr.push(sarr); st.snapUsed += 32; }
        let prefix = '', ok = ctx.ok;
        if (ok) {
          const s = localSelector(el, ctx.root, cache, opts.maxSelector);
          if (s) prefix = ctx.prefix + s + ' ' + SPLIT + ' '; else ok = false;
        }
        // Light children come after the shadow tree (pushed first = visited last).
        const kids = el.childNodes;
        for (let i = kids.length - 1; i >= 0; i--) stack.push({ n: kids[i], out: arr, hid, mask: childMask, ctx, depth: it.depth + 1, pcursor: cursor, tvis: textVis });
        const skids = sr.childNodes;
        const sctx = { root: sr, win: ctx.win, prefix, ox: ctx.ox, oy: ctx.oy, ok };
        for (let i = skids.length - 1; i >= 0; i--) stack.push({ n: skids[i], out: arr ? sarr : null, hid, mask: childMask, ctx: sctx, depth: it.depth + 1, pcursor: cursor, tvis: textVis });
        continue;
      }
      pushChildren(el, arr, hid, childMask, ctx, it.depth + 1, cursor, textVis);
    }

    const tWalk = now();
    // Affordances: boxes, viewport priority, selectors.
    const boxes = [];
    for (const c of st.cands) {
      let r;
      try { r = c.el.getBoundingClientRect(); } catch (e) { continue; }
      if (!(r.width > 0 && r.height > 0)) continue;
      const x = r.left + c.ctx.ox, y = r.top + c.ctx.oy;
      c.inView = x < vw && y < vh && x + r.width > 0 && y + r.height > 0;
      boxes.push(c);
    }
    const tBox = now();
    const prio = boxes.filter((c) => c.inView).concat(boxes.filter((c) => !c.inView));
    const kept = [];
    let selectorFailed = 0;
    for (const c of prio) {
      if (kept.length >= opts.maxAffordances) break;
      const local = localSelector(c.el, c.ctx.root, cache, opts.maxSelector);
      const sel = local ? c.ctx.prefix + local : '';
      if (!sel || sel.length > opts.maxSelector) { selectorFailed++; continue; }
      kept.push({ c, sel });
    }
    kept.sort((a, b) => a.c.order - b.c.order);
    const tSel = now();
    const affordances = kept.map(({ c, sel }) => {
      const a = { selector: sel };
      const role = roleOf(c.el);
      if (role) a.role = cut(role, 128);
      const name = c.sens ? norm(attr(c.el, 'aria-label') || attr(c.el, 'placeholder') || labelsOnly(c.el, opts.maxAffordanceText)) : accessibleName(c.el, opts.maxAffordanceText, isSensitive);
      if (name) a.text = cut(name, opts.maxAffordanceText);
      a.hint = hintOf(c.el);
      return a;
    });

    // Text: join, normalize, bound.
    let text = st.text.join('')
      .replace(/[ \t\f\r\u00a0]+/g, ' ')
      .replace(/ *\n */g, '\n')
      .replace(/\n{2,}/g, '\n')
      .trim();
    if (st.textTruncated || text.length > opts.maxTextChars) {
      st.textTruncated = true;
      text = cut(text, Math.max(0, opts.maxTextChars - TEXT_MARKER.length)) + TEXT_MARKER;
    }

    // Members in canonical order (see sortedMembers).
    const snapshot = {
      root: rootArr,
      truncated: {
        depth: st.tooDeep,
        snapshot: st.snapDropped,
        walk: st.walkTruncated,
      },
      v: 1,
    };
    const stats = {
      elements: st.walked,
      candidates: st.cands.length,
      affordances: affordances.length,
      affordancesDropped: Math.max(0, boxes.length - affordances.length),
      selectorFailed,
      walkTruncated: st.walkTruncated,
      tooDeep: st.tooDeep,
      snapshotDropped: st.snapDropped,
      textTruncated: st.textTruncated,
      masked: st.masked,
      frames: st.frames,
      crossOriginFrames: st.crossOriginFrames,
      shadowRoots: st.shadowRoots,
      walkMs: Math.round(tWalk - t0),
      boxMs: Math.round(tBox - tWalk),
      selectorMs: Math.round(tSel - tBox),
    };
    // The snapshot is stringified once; its size estimate ignores JSON
    // escapes, so if escapes pushed it past its budget it is replaced by a
    // stub rather than exceed the bound.
    let snap = JSON.stringify(snapshot);
    if (snap.length > opts.maxSnapshotChars) {
      stats.snapshotDropped = -1;
      snap = JSON.stringify({ root: ['#document', { url: cut(doc.URL || '', 2048) }, [SNAP_MARKER]], truncated: { depth: st.tooDeep, snapshot: -1, walk: st.walkTruncated }, v: 1 });
    }
    stats.ms = Math.round(now() - t0);
    const head = JSON.stringify({
      ok: true,
      url: cut(doc.URL || '', 4096),
      title: cut(norm(doc.title || ''), 4096),
      viewport: { width: vw, height: vh, dpr: root.devicePixelRatio || 1 },
      text,
      affordances,
      stats,
    });
    const out = head.slice(0, -1) + ',"snapshot":' + snap + '}';
    return out;
  }

  function labelsOnly(el, max) {
    try {
      if (el.labels && el.labels.length) return norm(Array.from(el.labels).slice(0, 4).map((l) => boundedText(l, max, () => false)).join(' '));
    } catch (e) { /* ignore */ }
    return '';
  }

  // ---------------------------------------------------------------------
  // describe.

  function describeEl(el, isSensitive) {
    const t = lname(el);
    const out = { tag: t };
    const ty = attr(el, 'type');
    if (ty && (t === 'input' || t === 'button')) out.type = ty;
    const nm = attr(el, 'name'); if (nm) out.name = nm;
    const id = attr(el, 'id'); if (id) out.id = id;
    const ac = attr(el, 'autocomplete'); if (ac) out.autocomplete = ac;
    const role = roleOf(el); if (role) out.role = role;
    const label = isSensitive(el) ? norm(attr(el, 'aria-label') || labelsOnly(el, 1024) || attr(el, 'placeholder') || attr(el, 'title') || '') : accessibleName(el, 1024, isSensitive);
    if (label) out.label = label;
    const hasText = !(t === 'input' || t === 'textarea' || t === 'select') && !isSensitive(el);
    if (hasText) {
      const tx = boundedText(el, 1024, isSensitive);
      if (tx) out.text = tx;
    }
    return out;
  }

  function describe(sel, o) {
    return result(() => {
      const opts = normOpts(o);
      const el = resolve(sel);
      return { element: describeEl(el, makeSensitive(opts.sensitive)) };
    });
  }

  // ---------------------------------------------------------------------
  // Actionability.

  function visible(el) {
    try {
      if (typeof el.checkVisibility === 'function') {
        if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true, opacityProperty: true, visibilityProperty: true })) return false;
      } else {
        const s = styleOf(el);
        if (!s || s.display === 'none' || s.visibility !== 'visible' || s.opacity === '0') return false;
      }
      const r = el.getBoundingClientRect();
      return r.width > 0 && r.height > 0;
    } catch (e) { return false; }
  }

  function checkInteractable(el, what) {
    if (!el.isConnected) throw new Fail('element_not_found', 'the element is no longer in the page');
    if (!visible(el)) throw new Fail('not_interactable', 'the element is hidden or has no size');
    let disabled = false;
    try { disabled = el.matches(':disabled'); } catch (e) { disabled = false; }
    if (disabled) throw new Fail('not_interactable', 'the element is disabled');
    if (String(attr(el, 'aria-disabled') || '').toLowerCase() === 'true') throw new Fail('not_interactable', 'the element is aria-disabled');
    if (what === 'type') {
      let ro = false;
      try { ro = el.matches(':read-only') && !isEditable(el); } catch (e) { ro = false; }
      if (ro) throw new Fail('not_interactable', 'the element is read-only or not editable');
    }
  }

  function inViewport(el) {
    const r = el.getBoundingClientRect();
    const w = winOf(el);
    return r.top >= 0 && r.left >= 0 && r.bottom <= (w.innerHeight || 0) && r.right <= (w.innerWidth || 0);
  }

  function bringIntoView(el) {
    if (inViewport(el) && frameFullyVisible(el)) return;
    try { el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' }); } catch (e) {
      try { el.scrollIntoView(); } catch (e2) { /* ignore */ }
    }
  }

  function frameFullyVisible(el) {
    const off = frameOffset(el);
    const r = el.getBoundingClientRect();
    const x = r.left + off.x, y = r.top + off.y;
    return x >= 0 && y >= 0 && x + r.width <= root.innerWidth && y + r.height <= root.innerHeight;
  }

  // deepHit returns the innermost element at top-level viewport point (x, y),
  // descending into open shadow roots and same-origin frames, with the point
  // in that element's own viewport: {el, x, y}, or null when nothing is there.
  // The executor content script uses it too (through the api), so both
  // drivers hit-test identically.
  function deepHit(x, y) {
    let doc = root.document;
    let scope = doc;
    let hit = null;
    let guard = 0;
    while (guard++ < 64) {
      const h = scope.elementFromPoint(x, y);
      if (!h || h === hit) break;
      hit = h;
      if (h.shadowRoot && h.shadowRoot !== scope) { scope = h.shadowRoot; continue; }
      if (isFrame(h)) {
        const fd = frameDoc(h);
        if (!fd) break;
        const r = h.getBoundingClientRect();
        const st = styleOf(h);
        x -= r.left + h.clientLeft + (st ? parseFloat(st.paddingLeft) || 0 : 0);
        y -= r.top + h.clientTop + (st ? parseFloat(st.paddingTop) || 0 : 0);
        doc = fd; scope = fd; hit = null;
        continue;
      }
      break;
    }
    return hit ? { el: hit, x, y } : null;
  }

  function composedContains(anc, n) {
    let guard = 0;
    while (n && guard++ < 4096) {
      if (n === anc) return true;
      n = n.parentNode || (n.host && n.nodeType === 11 ? n.host : null);
    }
    return false;
  }

  let armed = null;

  function disarm() {
    if (!armed) return null;
    const a = armed;
    armed = null;
    for (const [w, type, fn] of a.listeners) {
      try { apply(origRemove || w.removeEventListener, w, [type, fn, true]); } catch (e) { /* ignore */ }
    }
    return a;
  }

  function arm(el) {
    disarm();
    const state = { el, listeners: [], intercepted: '', seen: false, navigating: false, download: false, submit: null };
    const target = winOf(el);
    const wins = [];
    let w = target, guard = 0;
    while (w && guard++ < 64) {
      wins.push(w);
      if (w === root) break;
      let fe = null;
      try { fe = w.frameElement; } catch (e) { fe = null; }
      w = fe ? winOf(fe) : null;
    }
    const types = ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click'];
    for (const win of wins) {
      for (const type of types) {
        const fn = (ev) => {
          if (!ev.isTrusted || armed !== state) return;
          let ok = false;
          if (win === target) {
            try { ok = ev.composedPath().includes(el); } catch (e) { ok = false; }
          }
          if (ok) { state.seen = true; return; }
          if (!state.intercepted) state.intercepted = short(ev.composedPath ? ev.composedPath()[0] : ev.target);
          ev.preventDefault();
          ev.stopImmediatePropagation();
        };
        apply(origAdd || win.addEventListener, win, [type, fn, true]);
        state.listeners.push([win, type, fn]);
      }
      try {
        const nav = win.navigation;
        if (nav && typeof nav.addEventListener === 'function') {
          const fn = (ev) => {
            if (armed !== state) return;
            if (ev.downloadRequest != null) state.download = true;
            else if (!ev.destination || !ev.destination.sameDocument) state.navigating = true;
          };
          apply(origAdd || nav.addEventListener, nav, ['navigate', fn, true]);
          state.listeners.push([nav, 'navigate', fn]);
        }
      } catch (e) { /* no Navigation API */ }
      // A form submission plans its navigation in a later task, which may
      // run after finishClick: remember the submit event and judge it there,
      // when every handler has had its chance to cancel it.
      const sb = (ev) => { if (armed === state && ev.isTrusted !== false) state.submit = ev; };
      apply(origAdd || win.addEventListener, win, ['submit', sb, true]);
      state.listeners.push([win, 'submit', sb]);
      const bu = () => { if (armed === state) state.navigating = true; };
      apply(origAdd || win.addEventListener, win, ['beforeunload', bu, true]);
      state.listeners.push([win, 'beforeunload', bu]);
    }
    armed = state;
  }

  function prepareClick(sel) {
    return result(() => {
      const el = resolve(sel);
      checkInteractable(el, 'click');
      bringIntoView(el);
      const r = el.getBoundingClientRect();
      const off = frameOffset(el);
      // Click the middle of the first client rect that is inside the viewport
      // (a wrapped inline link has several).
      let box = r;
      try {
        const rects = el.getClientRects();
        for (let i = 0; i < rects.length; i++) {
          const q = rects[i];
          if (q.width > 0 && q.height > 0) { box = q; break; }
        }
      } catch (e) { /* use r */ }
      const x = box.left + off.x + box.width / 2;
      const y = box.top + off.y + box.height / 2;
      if (x < 0 || y < 0 || x >= root.innerWidth || y >= root.innerHeight) throw new Fail('not_interactable', 'the element cannot be scrolled into the viewport');
      const hit = deepHit(x, y);
      if (!hit || !composedContains(el, hit.el)) {
        throw new Fail('not_interactable', 'the element is covered by ' + (hit ? short(hit.el) : 'nothing at its center'));
      }
      arm(el);
      return { x, y };
    });
  }

  function finishClick() {
    return result(() => {
      const a = disarm();
      if (!a) return { seen: false, navigating: false };
      if (a.intercepted) throw new Fail('not_interactable', 'the click landed on ' + a.intercepted + ' instead of the element and was stopped');
      const submitted = !!(a.submit && !a.submit.defaultPrevented);
      return { seen: a.seen, navigating: a.navigating || submitted, download: a.download };
    });
  }

  function deepActive(doc) {
    let a = doc.activeElement;
    let guard = 0;
    while (a && guard++ < 64) {
      if (a.shadowRoot && a.shadowRoot.activeElement) { a = a.shadowRoot.activeElement; continue; }
      if (isFrame(a)) { const d = frameDoc(a); if (d && d.activeElement) { a = d.activeElement; continue; } }
      break;
    }
    return a;
  }

  function prepareType(sel) {
    return result(() => {
      const el = resolve(sel);
      const t = lname(el);
      let mode = 'insert';
      if (t === 'input') {
        const ty = inputType(el);
        if (VALUE_INPUTS.has(ty)) mode = 'value';
        else if (!TEXT_INPUTS.has(ty)) throw new Fail('not_interactable', 'an input of type ' + cut(ty, 32) + ' does not take text', 0, true);
      } else if (t !== 'textarea' && !el.isContentEditable) {
        throw new Fail('not_interactable', 'the element does not take text (' + short(el) + ')', 0, true);
      }
      checkInteractable(el, 'type');
      bringIntoView(el);
      if (mode === 'insert') {
        try { winOf(el).focus(); } catch (e) { /* ignore */ }
        el.focus({ preventScroll: true });
        if (deepActive(root.document) !== el) throw new Fail('not_interactable', 'the element did not take the focus');
        if (t === 'input' || t === 'textarea') {
          try { el.select(); } catch (e) {
            try { el.setSelectionRange(0, el.value.length); } catch (e2) { /* ignore */ }
          }
        } else {
          const d = el.ownerDocument;
          const range = d.createRange();
          range.selectNodeContents(el);
          const s = winOf(el).getSelection();
          s.removeAllRanges();
          s.addRange(range);
        }
      }
      return { mode };
    });
  }

  function fire(el, type) {
    const w = winOf(el);
    el.dispatchEvent(new w.Event(type, { bubbles: true, composed: true }));
  }

  function setValue(sel, text) {
    return result(() => {
      const el = resolve(sel);
      checkInteractable(el, 'type');
      el.value = String(text);
      fire(el, 'input');
      fire(el, 'change');
      return {};
    });
  }

  function select(sel, value) {
    return result(() => {
      const el = resolve(sel);
      if (lname(el) !== 'select') throw new Fail('not_interactable', 'the element is not a <select> (' + short(el) + ')', 0, true);
      checkInteractable(el, 'select');
      const opts = Array.from(el.options);
      let pick = opts.filter((o) => o.value === value);
      if (pick.length === 0) pick = opts.filter((o) => norm(o.label || o.text) === norm(value));
      if (pick.length === 0) throw new Fail('element_not_found', 'no option has this value or label', 0, true);
      if (pick.length > 1) throw new Fail('ambiguous_selector', pick.length + ' options have this value or label', pick.length, true);
      if (pick[0].disabled) throw new Fail('not_interactable', 'the option is disabled');
      bringIntoView(el);
      try { el.focus({ preventScroll: true }); } catch (e) { /* ignore */ }
      for (const o of opts) o.selected = o === pick[0];
      fire(el, 'input');
      fire(el, 'change');
      return { value: cut(pick[0].value, 2048), label: cut(norm(pick[0].label || pick[0].text), 2048) };
    });
  }

  function scroll(dy) {
    return result(() => {
      const se = root.document.scrollingElement || root.document.documentElement;
      let d = Number(dy);
      if (!isFinite(d) || d === 0) d = root.innerHeight || 600;
      const before = se.scrollTop;
      se.scrollBy({ top: d, left: 0, behavior: 'instant' });
      return { before, after: se.scrollTop, max: Math.max(0, se.scrollHeight - se.clientHeight) };
    });
  }

  // ---------------------------------------------------------------------
  // extract.

  function visibleText(scope, opts, isSensitive) {
    // Reuses observe's walk on a subtree: only text, no snapshot.
    const parts = [];
    let len = 0, truncated = false;
    const stack = [{ n: scope, tvis: true }];
    let walked = 0;
    while (stack.length) {
      const it = stack.pop();
      if (it.end) { parts.push('\n'); continue; }
      const n = it.n;
      if (n.nodeType === 3) {
        if (it.tvis) { const t = n.data.replace(WS, ' '); parts.push(t); len += t.length; }
        if (len > opts.maxTextChars) { truncated = true; break; }
        continue;
      }
      if (n.nodeType === 9 || n.nodeType === 11) {
        const kids = n.childNodes;
        for (let i = kids.length - 1; i >= 0; i--) stack.push({ n: kids[i], tvis: true });
        continue;
      }
      if (!isElement(n)) continue;
      if (++walked > opts.maxElements) { truncated = true; break; }
      const tag = lname(n);
      if (SKIP_CONTENT.has(tag)) continue;
      const s = styleOf(n);
      if (!s || s.display === 'none' || s.opacity === '0') continue;
      if (isSensitive(n)) continue;
      const vis = s.visibility === 'visible';
      const block = vis && !s.display.startsWith('inline') && s.display !== 'contents';
      if (block) { parts.push('\n'); stack.push({ end: true }); }
      if (tag === 'select') {
        if (vis) { const o = n.selectedOptions && n.selectedOptions[0]; if (o) parts.push(' ' + norm(o.label || o.text) + ' '); }
        continue;
      }
      if (tag === 'input' || tag === 'textarea') {
        if (vis && n === scope) { try { parts.push(String(n.value)); } catch (e) { /* ignore */ } }
        else if (vis && tag === 'input' && BUTTON_INPUTS.has(inputType(n))) parts.push(' ' + norm(attr(n, 'value') || '') + ' ');
        continue;
      }
      if (isFrame(n)) { const d = frameDoc(n); if (d) stack.push({ n: d, tvis: true }); continue; }
      if (n.shadowRoot) stack.push({ n: n.shadowRoot, tvis: true });
      const kids = n.childNodes;
      for (let i = kids.length - 1; i >= 0; i--) stack.push({ n: kids[i], tvis: vis });
    }
    let text = parts.join('').replace(/[ \t\f\r\u00a0]+/g, ' ').replace(/ *\n */g, '\n').replace(/\n{2,}/g, '\n').trim();
    if (truncated || text.length > opts.maxTextChars) text = cut(text, Math.max(0, opts.maxTextChars - TEXT_MARKER.length)) + TEXT_MARKER;
    return text;
  }

  function tableRows(t, opts, isSensitive) {
    const rows = [];
    let size = 2;
    const native = lname(t) === 'table';
    const trs = native ? Array.from(t.rows) : Array.from(t.querySelectorAll('[role="row"]'));
    for (const tr of trs.slice(0, 5000)) {
      const cells = native ? Array.from(tr.cells) : Array.from(tr.querySelectorAll('[role="cell"],[role="gridcell"],[role="columnheader"],[role="rowheader"]'));
      const row = cells.slice(0, 256).map((c) => (isSensitive(c) ? MASK : visibleText(c, { maxTextChars: 2000, maxElements: 2000 }, isSensitive)));
      size += row.reduce((a, s) => a + s.length + 3, 2);
      if (size > opts.maxTextChars) break;
      rows.push(row);
    }
    return rows;
  }

  function findTables(doc) {
    const out = [];
    const stack = [doc];
    let guard = 0;
    while (stack.length && guard++ < 1000) {
      const r = stack.pop();
      r.querySelectorAll('table,[role="table"],[role="grid"],[role="treegrid"]').forEach((t) => out.push(t));
      r.querySelectorAll('iframe,frame').forEach((f) => { const d = frameDoc(f); if (d) stack.push(d); });
    }
    return out;
  }

  function links(scope, max) {
    const out = [];
    const stack = [scope];
    let guard = 0;
    while (stack.length && out.length < max && guard++ < 100000) {
      const n = stack.pop();
      if (n.nodeType === 9 || n.nodeType === 11) {
        const kids = n.childNodes;
        for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
        continue;
      }
      if (!isElement(n)) continue;
      const t = lname(n);
      if ((t === 'a' || t === 'area') && attr(n, 'href') != null) {
        let href = '';
        try { href = String(n.href); } catch (e) { href = ''; }
        if (href) out.push({ text: accessibleName(n, 200, null), href: cut(href, 2048) });
      }
      if (isFrame(n)) { const d = frameDoc(n); if (d) stack.push(d); continue; }
      const kids = n.childNodes;
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
      if (n.shadowRoot) stack.push(n.shadowRoot);
    }
    return out;
  }

  function extract(kind, sel, o) {
    return result(() => {
      const opts = normOpts(o);
      const isSensitive = makeSensitive(opts.sensitive);
      const scope = sel ? resolve(sel) : null;
      switch (kind) {
        case 'text': {
          if (scope && isSensitive(scope)) return { value: MASK };
          return { value: visibleText(scope || root.document, opts, isSensitive) };
        }
        case 'table': {
          let t = scope;
          if (!t) {
            const all = findTables(root.document);
            if (all.length === 0) throw new Fail('element_not_found', 'the page has no table');
            if (all.length > 1) throw new Fail('ambiguous_selector', all.length + ' tables on the page: name one with a selector', all.length);
            t = all[0];
          }
          const role = String(attr(t, 'role') || '').toLowerCase();
          if (lname(t) !== 'table' && role !== 'table' && role !== 'grid' && role !== 'treegrid') {
            throw new Fail('element_not_found', 'the selector does not address a table (' + short(t) + ')');
          }
          return { value: JSON.stringify(tableRows(t, opts, isSensitive)) };
        }
        case 'link': {
          const l = links(scope || root.document, 1000);
          let v = JSON.stringify(l);
          while (v.length > opts.maxTextChars && l.length) { l.length = Math.floor(l.length / 2); v = JSON.stringify(l); }
          return { value: v };
        }
      }
      throw new Fail('unsupported', 'unknown extraction');
    });
  }

  function rect(sel) {
    return result(() => {
      const el = resolve(sel);
      if (!visible(el)) throw new Fail('not_interactable', 'the element is hidden or has no size');
      bringIntoView(el);
      const r = el.getBoundingClientRect();
      const off = frameOffset(el);
      const x = Math.max(0, r.left + off.x), y = Math.max(0, r.top + off.y);
      const x2 = Math.min(root.innerWidth, r.right + off.x), y2 = Math.min(root.innerHeight, r.bottom + off.y);
      if (x2 <= x || y2 <= y) throw new Fail('not_interactable', 'the element is outside the viewport');
      return { x, y, width: x2 - x, height: y2 - y };
    });
  }

  function splitJSON(sel) { return result(() => ({ segments: split(sel) })); }

  function observeJSON(o) {
    try {
      return observe(o);
    } catch (e) {
      if (e instanceof Fail) return JSON.stringify({ ok: false, code: e.code, msg: cut(e.message, 1024) });
      return JSON.stringify({ ok: false, code: 'internal', msg: cut(String(e && e.message || e), 1024) });
    }
  }

  // ---------------------------------------------------------------------
  // Packing. The Playwright driver fetches observations with observePacked:
  // observe's JSON compressed with deflate-raw and base64-encoded, about a
  // tenth of its size, which the DevTools protocol, Playwright's driver and
  // its pipe to Go carry much faster than the JSON itself. The observation
  // is taken synchronously, as observe takes it; only the compression
  // waits. What it needs is captured here, before page scripts run. Where
  // something is missing or fails, the answer is observe's plain JSON.

  const PACK_PREFIX = 'deflate-raw;base64,';
  const packing = (() => {
    try {
      const P = {
        CompressionStream: root.CompressionStream,
        Blob: root.Blob,
        Response: root.Response,
        TextEncoder: root.TextEncoder,
        Uint8Array: root.Uint8Array,
        encode: root.TextEncoder.prototype.encode,
        stream: root.Blob.prototype.stream,
        pipeThrough: root.ReadableStream.prototype.pipeThrough,
        arrayBuffer: root.Response.prototype.arrayBuffer,
        subarray: root.Uint8Array.prototype.subarray,
        fromCharCode: String.fromCharCode,
        join: Array.prototype.join,
        btoa: root.btoa,
      };
      for (const k of Object.keys(P)) if (typeof P[k] !== 'function') return null;
      return Object.freeze(P);
    } catch (e) { return null; }
  })();

  async function pack(s) {
    const P = packing;
    const bytes = apply(P.encode, new P.TextEncoder(), [s]);
    const body = apply(P.pipeThrough, apply(P.stream, new P.Blob([bytes]), []), [new P.CompressionStream('deflate-raw')]);
    const u = new P.Uint8Array(await apply(P.arrayBuffer, new P.Response(body), []));
    const parts = [];
    for (let i = 0; i < u.length; i += 0x8000) parts[parts.length] = apply(P.fromCharCode, null, apply(P.subarray, u, [i, i + 0x8000]));
    return apply(P.btoa, root, [apply(P.join, parts, [''])]);
  }

  async function observePacked(o) {
    const s = observeJSON(o);
    if (!packing) return s;
    try {
      return PACK_PREFIX + await pack(s);
    } catch (e) {
      return s;
    }
  }

  const api = Object.freeze({
    version: VERSION,
    observe: observeJSON,
    observePacked,
    describe,
    prepareClick,
    finishClick,
    prepareType,
    setValue,
    select,
    scroll,
    extract,
    rect,
    split: splitJSON,
    hasClickListener,
    deepHit,
    deepActive,
  });
  Object.defineProperty(root, name, { value: api, writable: false, configurable: false, enumerable: false });
})(globalThis, "__aegis");
