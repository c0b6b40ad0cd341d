  // observer/actionability.js: a part of the observer, whole statements of the
  // function head.js opens (extension/embed.go joins the parts in order).
  // ---------------------------------------------------------------------
  // Actionability.

  function visible(el) {
    try {
      if (typeof el.checkVisibility === 'function') {
        if (!el.checkVisibility(VISIBILITY_CHECK)) return false;
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

  // Event builtins the click guard calls, taken at install (before any
  // page script runs: in the Playwright driver the guard shares the
  // page's main world, where a page may replace them later) and called
  // through Reflect.apply. isTrusted is an unforgeable own property of
  // every event and needs no such care.
  const EventProto = root.Event ? root.Event.prototype : null;
  const evPrevent = EventProto ? EventProto.preventDefault : null;
  const evStop = EventProto ? EventProto.stopImmediatePropagation : null;
  const evPath = EventProto ? EventProto.composedPath : null;
  const arrIncludes = Array.prototype.includes;
  const arrPush = Array.prototype.push;

  // The events of a click the guard watches, in their order.
  const CLICK_STEPS = ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click'];

  function clickPath(ev) {
    try { return evPath ? apply(evPath, ev, []) : ev.composedPath(); } catch (e) { return []; }
  }

  function stopEvent(ev) {
    try { if (evPrevent) apply(evPrevent, ev, []); else ev.preventDefault(); } catch (e) { /* ignore */ }
    try { if (evStop) apply(evStop, ev, []); else ev.stopImmediatePropagation(); } catch (e) { /* ignore */ }
  }

  function disarm() {
    if (!armed) return null;
    const a = armed;
    armed = null;
    for (const [w, type, fn] of a.listeners) {
      try { apply(origRemove || w.removeEventListener, w, [type, fn, true]); } catch (e) { /* ignore */ }
    }
    return a;
  }

  // MAX_STRAYS bounds the events of one click a note lists (a click has
  // five).
  const MAX_STRAYS = 8;

  // stray records that event type of the click armed as state went to node
  // (null: to nothing) instead of the element, and was stopped there (or
  // never dispatched). Before the click reached the element, the first
  // stray makes the click fail (intercepted); after, each is listed in the
  // note finishClick returns.
  function stray(state, type, node) {
    const where = node ? short(node) : 'nothing';
    if (!state.reached) {
      if (!state.intercepted) state.intercepted = where;
      return;
    }
    if (state.strays.length < MAX_STRAYS) state.strays.push([type, where]);
  }

  // refacts compares the armed element's facts (without CSS generated
  // content) with those taken when the guard was armed, and the page's
  // origin with the one described; it records the first difference in
  // state.changed ("when" says at which step) and answers whether there
  // was one.
  function refacts(state, when) {
    if (state.changed) return true;
    try {
      let changed = [];
      if (state.exp) {
        pageMoved(state.exp);
        changed = sameFacts(plainFacts(state.el, state.exp), state.plain);
      }
      const now = activation(state.el);
      if (now.form !== state.activation.form) changed.push('form');
      if (now.link !== state.activation.link || now.href !== state.activation.href) changed.push('link');
      if (changed.length) state.changed = 'the element changed ' + when + ' (' + changed.join(', ') + ')';
    } catch (e) { state.changed = String(e && e.message || e); }
    return !!state.changed;
  }

  // activation is what a click on el activates besides el itself, which
  // the facts do not name: the form it belongs to (its form attribute may
  // name another) and the closest link around it, with its href.
  function activation(el) {
    let form = null;
    try { form = el.form || null; } catch (e) { form = null; }
    let link = null, n = el, guard = 0;
    while (n && guard++ < 256) {
      if (isElement(n)) {
        const t = lname(n);
        if ((t === 'a' || t === 'area') && attr(n, 'href') != null) { link = n; break; }
      }
      n = n.parentNode || (n.host && n.nodeType === 11 ? n.host : null);
    }
    return { form, link, href: link ? attr(link, 'href') : null };
  }

  // guardEvent is the guard's capture listener for event type of a click
  // on window win: see arm.
  function guardEvent(win, type, ev) {
    const state = armed;
    if (!state || ev.isTrusted !== true || !apply(arrIncludes, state.wins, [win])) return;
    const path = clickPath(ev);
    let ok = false;
    if (win === state.target) {
      try { ok = apply(arrIncludes, path, [state.el]); } catch (e) { ok = false; }
    }
    if (ok && !state.checked) {
      state.checked = true;
      refacts(state, 'as the click reached it');
    }
    // The click event activates the element (follows its link, submits
    // its form): its facts are compared again right before, so a press
    // handler that rewrote the caption or the type gets no click.
    if (ok && type === 'click') refacts(state, 'between the press and the click');
    if (!state.decided) {
      state.decided = true;
      state.reached = ok && !state.changed;
    }
    if (ok && !state.changed) {
      state.seen = true;
      if (!state.strays.length) state.last = type;
      return;
    }
    if (!ok) stray(state, type, path.length ? path[0] : ev.target);
    stopEvent(ev);
  }

  // The guard listens on the observer's own window from install on, ahead
  // of every listener a page script adds there; on other windows (the
  // element's frame and those between, every other same-origin frame) it
  // adds its listeners when armed.
  for (const type of CLICK_STEPS) {
    try { apply(origAdd || root.addEventListener, root, [type, (ev) => guardEvent(root, type, ev), true]); } catch (e) { /* ignore */ }
  }

  // sameOriginWindows lists win and every same-origin window below it
  // (root.frames, recursively), at most 64.
  function sameOriginWindows(win, out, depth) {
    if (out.length >= 64 || depth > 16) return;
    try { if (!win.document) return; } catch (e) { return; }
    if (!apply(arrIncludes, out, [win])) apply(arrPush, out, [win]);
    let n = 0;
    try { n = win.frames.length; } catch (e) { n = 0; }
    for (let i = 0; i < n && out.length < 64; i++) {
      let f = null;
      try { f = win.frames[i]; } catch (e) { f = null; }
      if (f) sameOriginWindows(f, out, depth + 1);
    }
  }

  // arm installs the one-shot guard for a click on el. The first trusted
  // event of the click decides: when it reaches el (and, with exp, passes
  // the re-check below) the click reached the element the gate judged and
  // succeeds, whatever the page does next; when it lands elsewhere (el
  // covered before the pointer arrived) the click fails. Every event of
  // the click that lands on another element is stopped there, before or
  // after, so that a page that covers or swaps el as the button goes down
  // gets no click on an element nobody judged; finishClick's note says so.
  // The guard listens on el's window, the windows above it and every
  // other same-origin frame, so a frame put over el counts as another
  // element; a click none of whose events the guard saw (it went to a
  // frame created as the pointer arrived, or a cross-origin one) is
  // reported unseen by finishClick, and the driver fails it.
  // With exp (see check), the first trusted event that reaches el
  // re-checks it: if the page moved or the element's facts (without CSS
  // generated content, which :hover may change as the pointer arrives)
  // changed since prepareClick, that event and every later one of the
  // click are stopped, and finishClick says so; the click event itself
  // re-checks the facts again, and the form and the link around el (see
  // activation), so a press handler cannot change what the click
  // activates.
  function arm(el, exp) {
    disarm();
    const state = { el, exp, plain: exp ? plainFacts(el, exp) : null, activation: activation(el), checked: false, changed: '', listeners: [], wins: [], target: winOf(el), intercepted: '', seen: false, reached: false, decided: false, last: '', strays: [], navigating: false, download: false, submit: null };
    const wins = state.wins;
    let w = state.target, guard = 0;
    while (w && guard++ < 64) {
      if (!apply(arrIncludes, wins, [w])) apply(arrPush, wins, [w]);
      if (w === root) break;
      let fe = null;
      try { fe = w.frameElement; } catch (e) { fe = null; }
      w = fe ? winOf(fe) : null;
    }
    sameOriginWindows(root, wins, 0);
    for (const win of wins) {
      if (win !== root) {
        for (const type of CLICK_STEPS) {
          const fn = (ev) => guardEvent(win, type, ev);
          apply(origAdd || win.addEventListener, win, [type, fn, true]);
          state.listeners.push([win, type, fn]);
        }
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

  // clickPoint is where a click on el lands, in top-level viewport
  // coordinates: the middle of its first client rect of some size (a
  // wrapped inline link has several).
  function clickPoint(el) {
    const r = el.getBoundingClientRect();
    const off = frameOffset(el);
    let box = r;
    try {
      const rects = el.getClientRects();
      for (let i = 0; i < rects.length; i++) {
        const q = rects[i];
        if (q.width > 0 && q.height > 0) { box = q; break; }
      }
    } catch (e) { /* use r */ }
    return { x: box.left + off.x + box.width / 2, y: box.top + off.y + box.height / 2 };
  }

  function prepareClick(sel, expect) {
    return result(() => {
      const exp = expectation(expect);
      const el = resolveChecked(sel, exp);
      checkInteractable(el, 'click');
      bringIntoView(el);
      const { x, y } = clickPoint(el);
      if (x < 0 || y < 0 || x >= root.innerWidth || y >= root.innerHeight) throw new Fail('not_interactable', 'the element cannot be scrolled into the viewport');
      const hit = deepHit(x, y);
      if (!hit || !composedContains(el, hit.el)) {
        throw new Fail('not_interactable', 'the element is covered by ' + (hit ? short(hit.el) : 'nothing at its center'));
      }
      arm(el, exp);
      return { x, y };
    });
  }

  // onTop answers, for the extension's executor, which dispatches the
  // events of a click itself (untrusted: the guard ignores them), whether
  // the rest of the click may go on after the events it dispatched so far
  // at (x, y) to target (the innermost element there at prepare time),
  // next being the event it would dispatch next: '' when the armed element
  // is still in the page, on top at (x, y), and holds target; else what is
  // wrong ('<div id="..."> is there now', '<span> was moved out of the
  // element'). Before the click event (next: "click"), which activates
  // the element, and with the expectation prepareClick was given, the
  // element's facts (without CSS generated content) are compared too, as
  // the guard does for a real click: a difference is recorded for
  // finishClick, which then fails target_changed. The executor asks
  // before each of pointerup, mouseup and click, dispatches nothing more
  // on a non-empty answer (as the guard stops the rest of a real click)
  // and hands the answer to finishClick.
  function onTop(x, y, target, next) {
    const a = armed;
    if (!a) return 'nothing armed';
    const hit = deepHit(x, y);
    if (!a.el.isConnected || !hit || !composedContains(a.el, hit.el)) return (hit ? short(hit.el) : 'nothing') + ' is there now';
    if (target != null && !composedContains(a.el, target)) return short(target) + ' was moved out of the element';
    if (next === 'click' && refacts(a, 'between the press and the click')) return 'the element changed';
    return '';
  }

  // afterPress is the note of a click whose press reached the element and
  // whose rest did not: the strays the guard stopped, or withheld (the
  // executor's onTop answer, after the event it dispatched last: it
  // dispatched nothing more); '' when the whole click went to the element.
  function afterPress(a, withheld, after) {
    const how = 'the page ' + (a.el.isConnected ? 'covered or moved' : 'removed') + ' the element after ';
    if (a.strays.length) {
      const groups = [];
      for (const [type, where] of a.strays) {
        const g = groups.length ? groups[groups.length - 1] : null;
        if (g && g.where === where) g.types.push(type); else groups.push({ where, types: [type] });
      }
      const rest = groups.length === 1
        ? '(' + groups[0].types.join(', ') + ') reached ' + groups[0].where
        : 'reached ' + groups.map((g) => g.where + ' (' + g.types.join(', ') + ')').join(' and ');
      return how + (a.last || 'the press') + '; the rest of the click ' + rest + ' and was stopped there';
    }
    if (typeof withheld === 'string' && withheld) {
      let i = CLICK_STEPS.indexOf(typeof after === 'string' ? after : '');
      if (i < 1 || i >= CLICK_STEPS.length - 1) i = 1;
      return how + CLICK_STEPS[i] + '; the rest of the click (' + CLICK_STEPS.slice(i + 1).join(', ') + ') was not dispatched (' + cutMarked(withheld, 160) + ')';
    }
    return '';
  }

  // finishClick disarms the guard and says what became of the click: a
  // failure when it did not reach the element (intercepted) or the element
  // changed as it did; else whether the guard saw it reach the element
  // (seen: a trusted click none of whose events the guard saw went
  // elsewhere, and the driver fails it), whether it started a navigation
  // or a download, and a note when the page covered or removed the
  // element after the press (see arm, and withheld, after: onTop).
  function finishClick(withheld, after) {
    return result(() => {
      const a = disarm();
      if (!a) return { seen: false, navigating: false };
      if (a.changed) throw new Fail('target_changed', cut(a.changed, 512) + '; the click was stopped', 0, true);
      if (a.intercepted) throw new Fail('not_interactable', 'the click landed on ' + a.intercepted + ' instead of the element and was stopped');
      const submitted = !!(a.submit && !a.submit.defaultPrevented);
      const r = { seen: a.seen, navigating: a.navigating || submitted, download: a.download };
      const note = afterPress(a, withheld, after);
      if (note) r.note = cutMarked(note, 1024);
      return r;
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

  function prepareType(sel, expect) {
    return result(() => {
      const el = resolveChecked(sel, expectation(expect));
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

  // checkFocus answers, after prepareType and right before the text is
  // inserted, whether the focus is still on the element sel addresses, in
  // a document of the origin describe reported, and the element and the
  // page are unchanged (with expect; see check). With secret (the text
  // to insert is a secret), the element is tainted (mask.js) once every
  // check passed: the last page step before the text goes in, so that
  // the taint, which changes what describe reports, never fails a check
  // of the action that typed it.
  function checkFocus(sel, expect, secret) {
    return result(() => {
      const exp = expectation(expect);
      const el = resolveChecked(sel, exp);
      const a = deepActive(root.document);
      if (a !== el) throw new Fail('not_interactable', 'the element lost the focus', 0, true);
      if (exp && originOf(winOf(a)) !== factOf(exp.element.origin, 512)) {
        throw new Fail('target_changed', 'the focused element is in a document of another origin than when it was described', 0, true);
      }
      if (secret === true) {
        taint(el);
        armTyping(el);
      }
      return {};
    });
  }

  function fire(el, type) {
    const w = winOf(el);
    el.dispatchEvent(new w.Event(type, { bubbles: true, composed: true }));
  }

  // setValue sets the value of a date, time, colour or range input; with
  // secret, it taints the element first (see checkFocus).
  function setValue(sel, text, expect, secret) {
    return result(() => {
      const el = resolveChecked(sel, expectation(expect));
      checkInteractable(el, 'type');
      if (secret === true) taint(el);
      el.value = String(text);
      fire(el, 'input');
      fire(el, 'change');
      return {};
    });
  }

  function select(sel, value, expect) {
    return result(() => {
      const el = resolveChecked(sel, expectation(expect));
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
