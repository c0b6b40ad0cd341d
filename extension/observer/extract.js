  // observer/extract.js: a part of the observer, whole statements of the
  // function head.js opens (extension/embed.go joins the parts in order).
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
      if (tainted(n)) continue;
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
          if (scope && (isSensitive(scope) || taintedWithin(scope))) return { value: MASK };
          return { value: visibleText(scope || root.document, opts, isSensitive) };
        }
        case 'table': {
          let t = scope;
          if (t && taintedWithin(t)) return { value: jsonStringify([[MASK]]) };
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
          return { value: jsonStringify(tableRows(t, opts, isSensitive)) };
        }
        case 'link': {
          const l = scope && taintedWithin(scope) ? [] : links(scope || root.document, 1000);
          let v = jsonStringify(l);
          while (v.length > opts.maxTextChars && l.length) { l.length = Math.floor(l.length / 2); v = jsonStringify(l); }
          return { value: v };
        }
      }
      throw new Fail('unsupported', 'unknown extraction');
    });
  }
