  // observer/names.js: a part of the observer, whole statements of the
  // function head.js opens (extension/embed.go joins the parts in order).
  // ---------------------------------------------------------------------
  // Roles, names, sensitivity.

  const TEXT_INPUTS = new Set(['', 'text', 'search', 'email', 'url', 'tel', 'password', 'number']);
  const VALUE_INPUTS = new Set(['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range']);
  const BUTTON_INPUTS = new Set(['button', 'submit', 'reset', 'image']);
  const INTERACTIVE_ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'switch', 'tab', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'option', 'combobox', 'textbox', 'searchbox', 'slider',
    'spinbutton', 'treeitem', 'listbox', 'gridcell']);

  function inputType(el) { return String(attr(el, 'type') || '').toLowerCase().trim(); }

  // isControl reports whether el is a control by its tag or its role, as
  // the accessibility tree knows it (not by an event handler, a pointer
  // cursor or a tabindex): a link, a button, a form field, a summary, an
  // element with an interactive role, an editing host.
  function isControl(el) {
    switch (lname(el)) {
      case 'a': case 'area': if (attr(el, 'href') != null) return true; break;
      case 'button': case 'select': case 'textarea': case 'summary': return true;
      case 'input': return inputType(el) !== 'hidden';
    }
    const role = attr(el, 'role');
    if (role && INTERACTIVE_ROLES.has(norm(role).split(' ')[0].toLowerCase())) return true;
    return isEditable(el);
  }

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

  const SECRET_NAME = /(pass(word|wd|code|phrase)?|pwd|secret|otp|one[-_ ]?time|totp|2fa|mfa|cvv|cvc|csc|card[-_ ]?(num|no|number)|cc[-_ ]?(num|number)|ssn|security[-_ ]?code|token|api[-_]?key|credential|(^|[^a-z])pin([^a-z]|$))/i;

  function autocompleteSensitive(ac) {
    if (!ac) return false;
    for (const tok of ac.toLowerCase().split(/\s+/)) {
      if (tok.startsWith('cc-') || tok === 'one-time-code' || tok === 'current-password' || tok === 'new-password') return true;
    }
    return false;
  }

  function makeSensitive(selectors) {
    refreshTaint();
    for (const s of selectors) {
      try { root.document.createDocumentFragment().querySelector(s); } catch (e) {
        throw new Fail('internal', 'invalid sensitive selector: ' + cut(s, 200));
      }
    }
    return function isSensitive(el) {
      if (tainted(el)) return true;
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

  // readCssString reads the CSS string that starts at s[i] (a quote), with its
  // escapes, and returns [its value, the index after it].
  function readCssString(s, i) {
    const q = s[i++];
    let v = '';
    while (i < s.length && s[i] !== q) {
      const c = s[i];
      if (c !== '\\') { v += c; i++; continue; }
      i++;
      if (i >= s.length) break;
      if (s[i] === '\n') { i++; continue; }
      const hex = /^[0-9a-fA-F]{1,6}/.exec(s.slice(i, i + 6));
      if (hex) {
        const cp = parseInt(hex[0], 16);
        v += cp > 0 && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff) ? String.fromCodePoint(cp) : '\ufffd';
        i += hex[0].length;
        if (isCssSpace(s[i] || '')) i++;
        continue;
      }
      v += s[i++];
    }
    return [v, i + 1];
  }

  // contentText is the text of a computed `content` value, as the
  // accessible-name computation takes CSS generated content: its strings
  // and attr() values in order, or its alternative text (after "/") when it
  // has one; counters, quotes and images give no text.
  function contentText(el, c) {
    let main = '', alt = null, i = 0, guard = 0;
    const add = (v) => { if (alt === null) main += v; else alt += v; };
    while (i < c.length && guard++ < 1024) {
      const ch = c[i];
      if (ch === '"' || ch === "'") { const [v, j] = readCssString(c, i); add(v); i = j; continue; }
      if (ch === '/') { alt = ''; i++; continue; }
      const fn = /^([A-Za-z-]+)\(/.exec(c.slice(i, i + 64));
      if (fn) {
        let depth = 0, j = i + fn[0].length - 1;
        for (; j < c.length; j++) {
          if (c[j] === '"' || c[j] === "'") { j = readCssString(c, j)[1] - 1; continue; }
          if (c[j] === '(') depth++;
          else if (c[j] === ')' && --depth === 0) break;
        }
        if (fn[1].toLowerCase() === 'attr') {
          const name = trimCss(c.slice(i + fn[0].length, j)).split(/[\s,]/)[0];
          if (name) add(attr(el, name) || '');
        }
        i = j + 1;
        continue;
      }
      i++;
    }
    return alt === null ? main : alt;
  }

  // withPseudo is false while the click guard compares an element with
  // itself across the pointer's arrival, which :hover may restyle.
  let withPseudo = true;

  // generated returns the text of el's ::before or ::after pseudo-element
  // (which), with a space on its outer side unless it is inline: an inline
  // one runs into the text next to it, as it renders; '' when it has none
  // or it is not rendered.
  function generated(el, which) {
    if (!withPseudo) return '';
    let st = null;
    try { st = winOf(el).getComputedStyle(el, which); } catch (e) { return ''; }
    if (!st) return '';
    let c = '', inline = true;
    try {
      c = String(st.content || '');
      if (!c || c === 'none' || c === 'normal' || st.display === 'none') return '';
      inline = String(st.display || 'inline').startsWith('inline');
    } catch (e) { return ''; }
    const t = contentText(el, c);
    if (!t || inline) return t;
    return ' ' + t + ' ';
  }

  // Replaced and void elements render no ::before or ::after.
  const NO_PSEUDO = new Set(['input', 'img', 'br', 'hr', 'wbr', 'area', 'iframe', 'frame', 'video', 'audio',
    'canvas', 'embed', 'object', 'meter', 'progress', 'select', 'textarea', 'svg', 'math']);

  // boundedText collects the visible-ish text of a subtree, with the CSS
  // generated content (::before, ::after) of its elements where they put
  // it, stopping at max characters, without ever reading form values.
  // With ownOnly it leaves out the controls inside el (isControl) and
  // their subtrees: el's own text, as a container's name.
  function boundedText(el, max, isSensitive, ownOnly) {
    let out = '';
    const stack = [el];
    let guard = 0;
    // glue: the last thing added was an inline ::before or text that an
    // inline ::after may run into, so the next piece joins it without a
    // space (a caption split between CSS and text reads as one word).
    let glue = false;
    while (stack.length && out.length < max && guard++ < 5000) {
      const n = stack.pop();
      if (typeof n === 'string') { out += n; glue = false; continue; }
      if (n.nodeType === 3) { out += (glue ? '' : ' ') + n.data; glue = true; continue; }
      glue = false;
      if (!isElement(n)) continue;
      const t = lname(n);
      if (t === 'script' || t === 'style' || t === 'template' || t === 'noscript') continue;
      if (isSensitive && isSensitive(n)) continue;
      if (ownOnly && n !== el && isControl(n)) continue;
      if (t === 'textarea' || t === 'select') continue;
      if (t === 'img') { const alt = attr(n, 'alt'); if (alt) out += ' ' + alt; continue; }
      if (t === 'input') {
        const ty = inputType(n);
        if (BUTTON_INPUTS.has(ty)) out += ' ' + (attr(n, 'value') || attr(n, 'alt') || '');
        continue;
      }
      const pseudo = !NO_PSEUDO.has(t);
      if (pseudo) {
        const after = generated(n, '::after');
        if (after) stack.push(after);
      }
      const kids = n.childNodes;
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
      if (pseudo) {
        const before = generated(n, '::before');
        if (before) { out += ' ' + before; glue = true; }
      }
    }
    return cutMarked(norm(out), max);
  }

  function byIds(el, ids, max, isSensitive) {
    const r = el.getRootNode ? el.getRootNode() : el.ownerDocument;
    const parts = [];
    for (const id of ids.split(/\s+/).slice(0, 16)) {
      if (!id) continue;
      let t = null;
      try { t = r.getElementById ? r.getElementById(id) : null; } catch (e) { t = null; }
      if (t && !taintedWithin(t)) parts.push(attr(t, 'aria-label') || boundedText(t, max, isSensitive));
    }
    return norm(parts.join(' '));
  }

  // FIELDS are the elements named by their labels rather than by their
  // content.
  const FIELDS = new Set(['input', 'select', 'textarea', 'meter', 'progress']);

  // accessibleName is the element's name as the browser's accessibility
  // tree computes it: aria-labelledby, aria-label; for a form field its
  // <label>s (by for= or wrapping), the value of a button input, the
  // nearest label-like text before it in its form row (rowLabel), its
  // placeholder; for an image its alt; for anything else its own text
  // (with CSS generated content) without the controls inside it, so that
  // a container is never named by a button it holds; last, the title. It
  // never reads the value of a text field.
  function accessibleName(el, max, isSensitive) {
    let s = '';
    const lb = attr(el, 'aria-labelledby');
    if (lb) s = byIds(el, lb, max, isSensitive);
    if (!s) s = norm(attr(el, 'aria-label') || '');
    const t = lname(el);
    if (!s && FIELDS.has(t)) {
      s = labelText(el, max, isSensitive);
      const ty = t === 'input' ? inputType(el) : '';
      if (!s && BUTTON_INPUTS.has(ty)) s = norm(attr(el, 'value') || attr(el, 'alt') || (ty === 'reset' ? 'Reset' : ty === 'submit' ? 'Submit' : ''));
      else if (!s) s = rowLabel(el, max, isSensitive) || norm(attr(el, 'placeholder') || '');
    } else if (!s && t === 'img') {
      s = norm(attr(el, 'alt') || '');
    } else if (!s && !(isSensitive && isSensitive(el))) {
      s = boundedText(el, max, isSensitive, true);
    }
    if (!s) s = norm(attr(el, 'title') || '');
    return cutMarked(s, max);
  }

  // sensitiveName names a sensitive field from what is not its value: its
  // aria-label, its <label>s, the label-like text before it in its form
  // row, its placeholder, its title. The observation and describe (the
  // gate's label) both name a sensitive field by it.
  function sensitiveName(el, max, isSensitive) {
    return norm(attr(el, 'aria-label') || labelsOnly(el, max, isSensitive) || rowLabel(el, max, isSensitive) ||
      attr(el, 'placeholder') || attr(el, 'title') || '');
  }

  // labelText is the text of el's <label>s (by for= or wrapping), at most
  // four of them.
  function labelText(el, max, isSensitive) {
    try {
      if (el.labels && el.labels.length) return norm(Array.from(el.labels).slice(0, 4).map((l) => boundedText(l, max, isSensitive)).join(' '));
    } catch (e) { /* ignore */ }
    return '';
  }

  // labelsOnly is the text of el's <label>s, without the sensitive or
  // tainted elements inside them (isSensitive, the session's test, which
  // the caller must hand in): the only name a tainted element gets. Without
  // a test it gives no name at all (fail closed): a label may hold text
  // the session marked sensitive.
  function labelsOnly(el, max, isSensitive) {
    if (typeof isSensitive !== 'function') return '';
    return labelText(el, max, isSensitive);
  }

  // ROW_ENDS are the elements a form row does not extend past: rowLabel
  // looks at the siblings inside them, never at theirs.
  const ROW_ENDS = new Set(['tr', 'li', 'dd', 'form', 'fieldset', 'dialog', 'body', 'html', 'table', 'tbody',
    'thead', 'tfoot', 'ul', 'ol', 'dl', 'section', 'article', 'main', 'nav', 'aside', 'header', 'footer']);
  // LABEL_LIKE are the elements whose short text may label the field after
  // them; any other element before the field ends the search.
  const LABEL_LIKE = new Set(['label', 'span', 'td', 'th', 'dt', 'div', 'p', 'b', 'strong', 'em', 'i', 'small',
    'font', 'legend']);
  // VISIBILITY_CHECK are the checkVisibility options of visible()
  // (actionability.js): hidden by display, content-visibility, visibility
  // or opacity.
  const VISIBILITY_CHECK = { checkOpacity: true, checkVisibilityCSS: true, opacityProperty: true, visibilityProperty: true };
  const ROW_SKIP = new Set(['br', 'script', 'style', 'template', 'noscript', 'wbr']);
  // MAX_ROW_LABEL is the longest text rowLabel takes as a label.
  const MAX_ROW_LABEL = 80;
  const ROW_LEVELS = 4;

  // rowLabel is the nearest label-like text before a field that has no
  // label, in its form row: a sibling <label> not linked to it by for=, a
  // text, a short <span> or a table cell before it, found through its
  // siblings and then its ancestors' siblings (at most ROW_LEVELS up, never
  // past a row's end, ROW_ENDS). It stops, with no name, at anything that
  // holds another control or a sensitive or tainted element, at a label of
  // another control, at a longer text and at any other element; and it
  // gives nothing to a field inside a sensitive or tainted element.
  function rowLabel(el, max, isSensitive) {
    const sens = isSensitive || (() => false);
    for (let a = parentOf(el); a; a = parentOf(a)) {
      if (sens(a)) return '';
    }
    let node = el;
    for (let level = 0; level < ROW_LEVELS; level++) {
      // parentOf climbs out of a shadow root to its host: a field inside a
      // web component is named by the text before the component.
      const p = parentOf(node);
      if (!p) return '';
      let guard = 0;
      for (let s = node.previousSibling; s && guard++ < 64; s = s.previousSibling) {
        const v = labelLike(s, el, max, sens);
        if (v === null) continue;
        return v;
      }
      if (ROW_ENDS.has(lname(p))) return '';
      node = p;
    }
    return '';
  }

  // parentOf is el's parent element, or the host of the shadow root el is
  // the top of.
  function parentOf(el) {
    if (el.parentElement) return el.parentElement;
    try {
      const r = el.parentNode;
      return r && r.nodeType === 11 && r.host ? r.host : null;
    } catch (e) { return null; }
  }

  // labelLike is what sibling s before field el says of el's name for
  // rowLabel: null when it says nothing (blank, hidden, a line break), the
  // label text when it is one, '' when it ends the search.
  function labelLike(s, el, max, sens) {
    if (s.nodeType === 3) {
      const t = norm(s.data);
      if (!t) return null;
      return t.length <= MAX_ROW_LABEL ? t : '';
    }
    if (!isElement(s)) return null;
    const t = lname(s);
    if (ROW_SKIP.has(t)) return null;
    // Invisible text (opacity 0, visibility hidden) names nothing: the
    // options are visible()'s (actionability.js).
    try { if (typeof s.checkVisibility === 'function' && !s.checkVisibility(VISIBILITY_CHECK)) return null; } catch (e) { return ''; }
    if (!LABEL_LIKE.has(t) || sens(s) || isControl(s)) return '';
    if (t === 'label') {
      let c = null;
      try { c = s.control; } catch (e) { c = null; }
      if (c && c !== el) return '';
    }
    if (holdsControl(s)) return '';
    const v = boundedText(s, max, sens);
    if (!v) return null;
    return v.length <= MAX_ROW_LABEL ? v : '';
  }

  // MAX_HOLD_CHECK bounds the elements holdsControl looks at.
  const MAX_HOLD_CHECK = 256;

  // holdsControl reports whether a control is, or may be, inside el: a
  // control (isControl), or an element with a shadow root or a custom
  // element (its controls are in a shadow tree, open or closed, that a
  // selector query does not reach). Past MAX_HOLD_CHECK elements it
  // answers yes.
  function holdsControl(el) {
    let list;
    try { list = el.querySelectorAll('*'); } catch (e) { return true; }
    if (list.length > MAX_HOLD_CHECK) return true;
    const mayHold = (n) => isControl(n) || !!n.shadowRoot || lname(n).includes('-');
    if (mayHold(el)) return true;
    for (let i = 0; i < list.length; i++) if (mayHold(list[i])) return true;
    return false;
  }
