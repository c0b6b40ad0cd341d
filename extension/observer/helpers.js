  // observer/helpers.js: a part of the observer, whole statements of the
  // function head.js opens (extension/embed.go joins the parts in order).
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

  // result runs fn and answers its value as JSON with ok: true, or the
  // failure it threw with ok: false. The top object has no prototype and
  // JSON.stringify and Object.assign are the ones taken at install (head.js),
  // so a page that replaces them, or defines Object.prototype.toJSON,
  // does not rewrite an answer.
  function result(fn) {
    try {
      const v = fn();
      return jsonStringify(assign({ __proto__: null, ok: true }, v));
    } catch (e) {
      if (e instanceof Fail) return jsonStringify({ __proto__: null, ok: false, code: e.code, msg: cut(e.message, 1024), count: e.count, final: e.final });
      return jsonStringify({ __proto__: null, ok: false, code: 'internal', msg: cut(String(e && e.message || e), 1024) });
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

  // cutMarked is cut for page words: a text longer than n ends, within n,
  // with "…" where it was cut, so that Go's egress filter knows a value
  // cut there may go on (a secret cut short is masked before a cut marker).
  function cutMarked(s, n) {
    s = String(s);
    if (s.length <= n) return s;
    return cut(s, Math.max(0, n - 1)) + '\u2026';
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
  // originOf returns the origin of window w (its document's origin, which
  // an about:blank or srcdoc frame inherits; "null" for an opaque one), as
  // the browser holds it, at most 512 characters.
  function originOf(w) {
    let o = '';
    try { o = originGet ? apply(originGet, w, []) : w.origin; } catch (e) { o = ''; }
    return typeof o === 'string' ? cut(o, 512) : '';
  }

  // short names el in a message: its tag and id, the id cut at 40
  // characters with a cut marker (see cutMarked).
  function short(el) {
    if (!isElement(el)) return 'node';
    let s = '<' + cut(lname(el), 32);
    const id = attr(el, 'id');
    if (id) s += ' id="' + cutMarked(id, 40) + '"';
    return s + '>';
  }
