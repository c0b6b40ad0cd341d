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

  // arm installs the one-shot guard for a click on el. The first trusted
  // event of the click decides: when it reaches el (and, with exp, passes
  // the re-check below) the click reached the element the gate judged and
  // succeeds, whatever the page does next; when it lands elsewhere (el
  // covered before the pointer arrived) the click fails. Every event of
  // the click that lands on another element is stopped there, before or
  // after, so that a page that covers or swaps el as the button goes down
  // gets no click on an element nobody judged; finishClick's note says so.
  // With exp (see check), the first trusted event that reaches el
  // re-checks it: if the page moved or the element's facts (without CSS
  // generated content, which :hover may change as the pointer arrives)
  // changed since prepareClick, that event and every later one of the
  // click are stopped, and finishClick says so.
  function arm(el, exp) {
    disarm();
    const state = { el, exp, plain: exp ? plainFacts(el, exp) : null, checked: false, changed: '', listeners: [], intercepted: '', seen: false, reached: false, decided: false, last: '', strays: [], navigating: false, download: false, submit: null };
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
          if (ok && state.exp && !state.checked) {
            state.checked = true;
            try {
              pageMoved(state.exp);
              const changed = sameFacts(plainFacts(el, state.exp), state.plain);
              if (changed.length) state.changed = 'the element changed as the click reached it (' + changed.join(', ') + ')';
            } catch (e) { state.changed = String(e && e.message || e); }
          }
          if (!state.decided) {
            state.decided = true;
            state.reached = ok && !state.changed;
          }
          if (ok && !state.changed) {
            state.seen = true;
            if (!state.strays.length) state.last = type;
            return;
          }
          if (!ok) stray(state, type, ev.composedPath ? ev.composedPath()[0] : ev.target);
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

  function prepareClick(sel, expect) {
    return result(() => {
      const exp = expectation(expect);
      const el = resolveChecked(sel, exp);
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
      arm(el, exp);
      return { x, y };
    });
  }

  // onTop answers, for the extension's executor, which dispatches the
  // events of a click itself (untrusted: the guard ignores them), whether
  // the armed element is still in the page and on top at (x, y) after the
  // press (pointerdown, mousedown) it dispatched there: '' when it is,
  // else what is there now ('nothing' when nothing is). The executor then
  // dispatches nothing more, as the guard stops the rest of a real click,
  // and hands the answer to finishClick. It changes nothing.
  function onTop(x, y) {
    const a = armed;
    const hit = deepHit(x, y);
    if (a && a.el.isConnected && hit && composedContains(a.el, hit.el)) return '';
    return hit ? short(hit.el) : 'nothing';
  }

  // afterPress is the note of a click whose press reached the element and
  // whose rest did not: the strays the guard stopped, or withheld (the
  // executor's onTop answer: it dispatched nothing more); '' when the
  // whole click went to the element.
  function afterPress(a, withheld) {
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
      return how + 'mousedown; the rest of the click (pointerup, mouseup, click) was not dispatched (' + cut(withheld, 128) + ' is there now)';
    }
    return '';
  }

  // finishClick disarms the guard and says what became of the click: a
  // failure when it did not reach the element (intercepted) or the element
  // changed as it did; else whether it started a navigation or a download,
  // and a note when the page covered or removed the element after the
  // press (see arm, and withheld: onTop).
  function finishClick(withheld) {
    return result(() => {
      const a = disarm();
      if (!a) return { seen: false, navigating: false };
      if (a.changed) throw new Fail('target_changed', cut(a.changed, 512) + '; the click was stopped', 0, true);
      if (a.intercepted) throw new Fail('not_interactable', 'the click landed on ' + a.intercepted + ' instead of the element and was stopped');
      const submitted = !!(a.submit && !a.submit.defaultPrevented);
      const r = { seen: a.seen, navigating: a.navigating || submitted, download: a.download };
      const note = afterPress(a, withheld);
      if (note) r.note = cut(note, 1024);
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
