  // observer/observe.js: a part of the observer, whole statements of the
  // function head.js opens (extension/embed.go joins the parts in order).
  // ---------------------------------------------------------------------
  // observe.

  const SKIP_CONTENT = new Set(['script', 'style', 'template', 'noscript']);
  const SAFE_SENSITIVE_ATTRS = new Set(['type', 'name', 'id', 'autocomplete', 'aria-label', 'placeholder',
    'class', 'role', 'required', 'disabled', 'readonly', 'maxlength', 'minlength', 'data-testid', 'for', 'title']);
  const CHECKABLE = new Set(['checkbox', 'radio']);
  // TAINTED is the mask of the subtree of a tainted element (mask.js); any
  // other truthy mask is a sensitive field's.
  const TAINTED = 2;

  // isGeneric reports whether el has a generic reason to be an affordance:
  // a tabindex, an onclick, a click or drag listener (mousedown and the
  // like), or a pointer cursor its parent does not have. An affordance
  // listed only for one of these, with no control's tag or role, is
  // marked generic.
  function isGeneric(el, st, parentCursor) {
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
        if (it.cand) it.cand.last = st.cands.length - 1;
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
      const tnt = it.mask === TAINTED || tainted(el);
      const sens = tnt || it.mask || isSensitive(el);
      if (sens) st.masked++;
      const safeAttrs = tnt ? TAINT_SAFE_ATTRS : SAFE_SENSITIVE_ATTRS;

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
          if (sens && !safeAttrs.has(an)) {
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

      // Affordance candidate. A generic one (no control's tag or role)
      // learns, at the end of its subtree, its last candidate descendant
      // (last), so that it can be listed after the controls it holds.
      if (!hid && ownVis && ctx.ok) {
        const control = isControl(el);
        if (control || isGeneric(el, style, it.pcursor)) {
          const c = { el, ctx, order: st.cands.length, sens, tnt, inMask: !!it.mask, generic: !control, last: -1 };
          st.cands.push(c);
          if (c.generic) stack.push({ end: true, cand: c });
        }
      }

      // Children.
      if (block) stack.push({ end: true, block: true });
      if (SKIP_CONTENT.has(tag) || tag === 'select' || tag === 'option') continue;
      const childTvis = !hid && !sens && tag !== 'textarea';
      // childTvis is refined per child element by its own style; text nodes
      // use the parent's own visibility.
      const textVis = childTvis && ownVis;
      const childMask = tnt ? TAINTED : sens;
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
    const modals = new Map();
    for (const c of st.cands) {
      if (isInert(c.el, modals)) continue;
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
    kept.sort(byListOrder(st.cands));
    const tSel = now();
    const affordances = kept.map((k) => {
      const { c, sel } = k;
      const a = { selector: sel };
      // What identity.js compares later: the role and the name as listed.
      k.role = roleOf(c.el);
      k.name = affordanceName(c, opts.maxAffordanceText, isSensitive);
      if (k.role) a.role = cut(k.role, 128);
      if (k.name) a.text = k.name;
      a.hint = hintOf(c.el);
      if (c.generic) a.generic = true;
      return a;
    });
    listAffordances(kept, opts.maxAffordanceText, isSensitive);

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
      peerRefused: takePeer(),
    };
    // The snapshot is stringified once; its size estimate ignores JSON
    // escapes, so if escapes pushed it past its budget it is replaced by a
    // stub rather than exceed the bound.
    let snap = jsonStringify(snapshot);
    if (snap.length > opts.maxSnapshotChars) {
      stats.snapshotDropped = -1;
      snap = jsonStringify({ root: ['#document', { url: cut(doc.URL || '', 2048) }, [SNAP_MARKER]], truncated: { depth: st.tooDeep, snapshot: -1, walk: st.walkTruncated }, v: 1 });
    }
    stats.ms = Math.round(now() - t0);
    const head = jsonStringify({
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

  // isInert reports whether el is inert, as the browser holds it: inside an
  // element with the inert attribute (a shadow host's too: it climbs the
  // composed tree, parentOf), or outside the modal <dialog> open in its
  // document, and the same for the frame element of every same-origin
  // document above its own (a modal in a parent document makes the frames
  // outside it inert). modals caches the modal by document. The page
  // cannot click such an element and the accessibility tree leaves it
  // out. A modal <dialog> inside a shadow root is not found (see
  // driver/README.md).
  function isInert(el, modals) {
    for (let e = el; e; e = frameElementOf(e)) {
      const doc = e.ownerDocument;
      const m = modalOf(doc, modals);
      let shadow = true;
      try {
        if (e.closest('[inert]')) return true;
        shadow = e.getRootNode() !== doc;
      } catch (err) { shadow = true; }
      // The walk in script is needed only across shadow roots or to find
      // the modal among the ancestors; closest covers the rest.
      if (!m && !shadow) continue;
      let inModal = !m;
      for (let a = e; a; a = parentOf(a)) {
        if (attr(a, 'inert') != null) return true;
        if (a === m) inModal = true;
      }
      if (!inModal) return true;
    }
    return false;
  }

  // modalOf is the modal <dialog> open in doc (the last one), or null;
  // modals caches it by document.
  function modalOf(doc, modals) {
    let m = modals.get(doc);
    if (m === undefined) {
      m = null;
      try {
        const open = doc.querySelectorAll('dialog:modal');
        if (open.length) m = open[open.length - 1];
      } catch (e) { m = null; }
      modals.set(doc, m);
    }
    return m;
  }

  // frameElementOf is the frame element el's document is shown in, when
  // that document's parent is reachable (same origin); else null.
  function frameElementOf(el) {
    try {
      const w = el.ownerDocument && el.ownerDocument.defaultView;
      return (w && w.frameElement) || null;
    } catch (e) { return null; }
  }

  // byListOrder orders the kept affordances ({c}) of cands: in document
  // order, except that a generic candidate holding controls (isControl) in
  // its subtree comes right after the last candidate of its subtree, and
  // so after the controls it holds (an inner one before an outer one).
  function byListOrder(cands) {
    // controls[i] counts the controls among cands[0..i-1].
    const controls = new Array(cands.length + 1);
    controls[0] = 0;
    for (let i = 0; i < cands.length; i++) controls[i + 1] = controls[i] + (cands[i].generic ? 0 : 1);
    const after = (c) => c.generic && c.last > c.order && controls[c.last + 1] > controls[c.order + 1];
    const key = (c) => (after(c) ? c.last : c.order);
    return (a, b) => {
      const ka = key(a.c), kb = key(b.c);
      if (ka !== kb) return ka - kb;
      const fa = after(a.c), fb = after(b.c);
      if (fa !== fb) return fa ? 1 : -1;
      return fa ? b.c.order - a.c.order : a.c.order - b.c.order;
    };
  }

  // affordanceName is the name an affordance is listed under, cut to max:
  // a tainted element is named by its labels only; a sensitive one never
  // by its value or content, and, inside a sensitive element, never by
  // the text around it. c holds the element (el) and what the walk found
  // about it (tnt: tainted, sens: sensitive, inMask: inside a sensitive
  // element). identity.js names the element again the same way.
  function affordanceName(c, max, isSensitive) {
    const el = c.el;
    const name = c.tnt ? labelsOnly(el, max, isSensitive)
      : c.sens && c.inMask ? norm(attr(el, 'aria-label') || attr(el, 'placeholder') || labelsOnly(el, max, isSensitive))
        : c.sens ? sensitiveName(el, max, isSensitive)
          : accessibleName(el, max, isSensitive);
    return name ? cutMarked(name, max) : '';
  }
