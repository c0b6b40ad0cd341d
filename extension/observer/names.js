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
