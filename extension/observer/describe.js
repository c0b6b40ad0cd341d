  // observer/describe.js: a part of the observer, whole statements of the
  // function head.js opens (extension/embed.go joins the parts in order).
  // ---------------------------------------------------------------------
  // describe.

  // describeEl reports the facts the gate judges the element on. type is
  // the current type property of an input or button (what the browser
  // renders and submits, not the attribute as written); sensitiveSelector
  // is the first of the session's sensitive selectors the element matches
  // (one that throws counts as matching: fail closed), so that the
  // browser, not the model's selector text, decides; origin is the origin
  // of the document the element is in.
  function describeEl(el, isSensitive, selectors) {
    const t = lname(el);
    const out = { tag: t };
    const origin = originOf(winOf(el)); if (origin) out.origin = origin;
    if (t === 'input' || t === 'button') {
      let ty = '';
      try { ty = el.type; } catch (e) { ty = ''; }
      if (typeof ty !== 'string' || !ty) ty = attr(el, 'type');
      if (ty) out.type = ty;
    }
    for (const s of selectors) {
      let m = true;
      try { m = el.matches(s); } catch (e) { m = true; }
      if (m) { out.sensitiveSelector = s; break; }
    }
    const nm = attr(el, 'name'); if (nm) out.name = nm;
    const id = attr(el, 'id'); if (id) out.id = id;
    const ac = attr(el, 'autocomplete'); if (ac) out.autocomplete = ac;
    const role = roleOf(el); if (role) out.role = role;
    // A tainted element's own attributes may hold what was typed: only
    // its <label> elements name it.
    const inTaint = taintedWithin(el);
    const label = inTaint ? labelsOnly(el, 1024, isSensitive) : isSensitive(el) ? sensitiveName(el, 1024, isSensitive) : accessibleName(el, 1024, isSensitive);
    if (label) out.label = cutMarked(label, 1024);
    const hasText = !(t === 'input' || t === 'textarea' || t === 'select') && !inTaint && !isSensitive(el);
    if (hasText) {
      const tx = boundedText(el, 1024, isSensitive);
      if (tx) out.text = tx;
    }
    return out;
  }

  // describe reports the element sel addresses, the origin of the
  // top-level page (pageOrigin), which check and the functions that act
  // compare with what they find when they act, and whether the element is
  // the one the last observe listed under sel (observed, see observedAs).
  function describe(sel, o) {
    return result(() => {
      const opts = normOpts(o);
      const el = resolve(sel);
      return { element: describeEl(el, makeSensitive(opts.sensitive), opts.sensitive), observed: observedAs(sel, el), pageOrigin: originOf(root) };
    });
  }

  // ---------------------------------------------------------------------
  // Time of check = time of use.

  // The facts check compares, with their contract bounds (code points):
  // the driver hands back what it got from describe, bounded and with
  // invalid UTF-16 replaced, so both sides are compared in that form.
  const FACTS = [['tag', 64], ['type', 64], ['name', 256], ['id', 256], ['autocomplete', 256], ['role', 64],
    ['label', 1024], ['text', 1024], ['sensitiveSelector', 2048], ['origin', 512]];

  function factOf(v, max) {
    let s = typeof v === 'string' ? v : '';
    if (toWellFormed) s = apply(toWellFormed, s, []);
    if (s.length <= max) return s;
    let n = 0, i = 0;
    while (i < s.length && n < max) { i += s.codePointAt(i) > 0xffff ? 2 : 1; n++; }
    return s.slice(0, i);
  }

  // expectation normalizes what the driver expects: {element: the element
  // describe reported, pageOrigin: the top-level page's origin then,
  // sensitive: the session's sensitive selectors}; null when it expects
  // nothing (the selector was never described).
  function expectation(x) {
    if (!x || typeof x !== 'object') return null;
    const element = x.element && typeof x.element === 'object' ? x.element : {};
    return {
      element,
      pageOrigin: typeof x.pageOrigin === 'string' ? x.pageOrigin : null,
      sensitive: normOpts({ sensitive: x.sensitive }).sensitive,
    };
  }

  // pageMoved throws target_changed when the top-level page is no longer
  // at the origin it had when the element was described.
  function pageMoved(exp) {
    if (exp && exp.pageOrigin !== null && originOf(root) !== exp.pageOrigin) {
      throw new Fail('target_changed', 'the page is at another origin than when the element was described', 0, true);
    }
  }

  // changedFacts lists the facts of el that differ from exp's element.
  function changedFacts(el, exp) {
    return sameFacts(describeEl(el, makeSensitive(exp.sensitive), exp.sensitive), exp.element);
  }

  // plainFacts are el's facts without CSS generated content, which the
  // pointer's arrival may change through :hover: what the click guard
  // compares between prepareClick and the first event of the click.
  function plainFacts(el, exp) {
    withPseudo = false;
    try {
      return describeEl(el, makeSensitive(exp.sensitive), exp.sensitive);
    } finally {
      withPseudo = true;
    }
  }

  // sameFacts lists the facts in which a and b differ.
  function sameFacts(a, b) {
    const changed = [];
    for (const [k, max] of FACTS) if (factOf(a[k], max) !== factOf(b[k], max)) changed.push(k);
    return changed;
  }

  // checkTarget throws target_changed when el or the page is not what exp
  // describes; nothing when exp is null.
  function checkTarget(el, exp) {
    if (!exp) return;
    pageMoved(exp);
    const changed = changedFacts(el, exp);
    if (changed.length) throw new Fail('target_changed', 'the element changed since it was described (' + changed.join(', ') + ')', 0, true);
  }

  // resolveChecked resolves sel after checking the page's origin, then
  // checks the element: the one step that finds the element to act on.
  function resolveChecked(sel, exp) {
    pageMoved(exp);
    const el = resolve(sel);
    checkTarget(el, exp);
    return el;
  }

  // check answers whether sel still addresses the element describe
  // reported (expect): {ok: true, changed: []}, or {ok: false, code:
  // "target_changed", changed: [the facts that differ, "pageOrigin"]}; a
  // selector that resolves to nothing fails as describe would.
  function check(sel, expect) {
    const exp = expectation(expect);
    let changed = [];
    const r = result(() => {
      if (exp && exp.pageOrigin !== null && originOf(root) !== exp.pageOrigin) changed = ['pageOrigin'];
      else if (exp) changed = changedFacts(resolve(sel), exp);
      else resolve(sel);
      return { changed };
    });
    if (!changed.length) return r;
    return jsonStringify({ ok: false, code: 'target_changed', msg: 'the target changed since it was described (' + changed.join(', ') + ')', final: true, changed });
  }
