  // observer/selectors.js: a part of the observer, whole statements of the
  // function head.js opens (extension/embed.go joins the parts in order).
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
