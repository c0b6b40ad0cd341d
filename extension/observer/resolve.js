  // observer/resolve.js: a part of the observer, whole statements of the
  // function head.js opens (extension/embed.go joins the parts in order).
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
      const r = sides(box(fe));
      const st = styleOf(fe);
      x += r.left + fe.clientLeft + (st ? parseFloat(st.paddingLeft) || 0 : 0);
      y += r.top + fe.clientTop + (st ? parseFloat(st.paddingTop) || 0 : 0);
      win = winOf(fe);
    }
    return { x, y };
  }
