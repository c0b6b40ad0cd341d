  // observer/mask.js: a part of the observer, whole statements of the
  // function head.js opens (extension/embed.go joins the parts in order).
  // ---------------------------------------------------------------------
  // Taint and screenshot masks.
  //
  // Taint: when a driver types a secret (a type action with Redact), the
  // element it typed into is remembered here, in a WeakSet of this
  // closure that no page script can reach, and from then on it is masked
  // in every observation, extraction and description whatever its type
  // has become (a "show password" button switches type=password to text;
  // a page may copy the value into attributes of the same element): its
  // value, its text, the text of its subtree and its attributes but the
  // few in TAINT_SAFE_ATTRS. Taint is per document, as this observer is:
  // a navigation replaces both, and the element with them.
  //
  // Masks: maskRects reports the boxes, in top-level viewport CSS pixels,
  // of every tainted element and every sensitive field (isSensitive) of
  // the top document, its open shadow roots and its same-origin frames,
  // whatever their type, visible or not. The drivers ask for them right
  // before and right after a screenshot and paint both sets opaque on the
  // image (driver/mask.go), where no page script can undo it; a
  // screenshot during which a tainted element moved is refused.

  // TAINT_SAFE_ATTRS are the only attributes of a tainted element that
  // reach a snapshot: id and name address the element (and are the facts
  // the gate judges it on), type says what kind of field it is. Every
  // other attribute (value, data-*, aria-label, placeholder, title,
  // class...) is dropped, as a page may copy the typed value into any of
  // them; a copy in these three is left to the egress filter's search for
  // the secret's value.
  const TAINT_SAFE_ATTRS = new Set(['id', 'name', 'type']);

  // The WeakSet's methods and the box getter are taken when the observer
  // installs, before any page script runs, and called through Reflect.apply,
  // so a page that replaces them later changes nothing here.
  const taintSet = new WeakSet();
  // taintList holds the same elements, for maskRects to measure directly
  // rather than find them by a walk a page script could mislead.
  const taintList = [];
  const taintHas = WeakSet.prototype.has;
  const taintAdd = WeakSet.prototype.add;
  const boxOf = root.Element ? root.Element.prototype.getBoundingClientRect : null;
  // The isConnected getter of Node.prototype (a page may give an element
  // an own isConnected that says false), and what contentBox measures
  // with. Applied to an element of a same-origin frame they work as well:
  // the frame's own prototypes, which its scripts may have changed, are
  // not used.
  const protoGet = (proto, k) => {
    try {
      const d = proto ? ownDesc(proto, k) : null;
      return d && typeof d.get === 'function' ? d.get : null;
    } catch (e) { return null; }
  };
  const connectedGet = protoGet(root.Node && root.Node.prototype, 'isConnected');
  const RangeOf = typeof root.Range === 'function' ? root.Range : null;
  const rangeSelect = RangeOf ? RangeOf.prototype.selectNodeContents : null;
  const rangeBox = RangeOf ? RangeOf.prototype.getBoundingClientRect : null;
  const arrPop = Array.prototype.pop;
  // The DOMRect getters the boxes are read with (a page may redefine
  // DOMRectReadOnly.prototype.width to say 0).
  const RP = root.DOMRectReadOnly ? root.DOMRectReadOnly.prototype : null;
  const rectGet = { __proto__: null, left: protoGet(RP, 'left'), top: protoGet(RP, 'top'), width: protoGet(RP, 'width'), height: protoGet(RP, 'height') };
  // sides reads the box r (a DOMRect) with those getters.
  function sides(r) {
    const g = (k) => (rectGet[k] ? apply(rectGet[k], r, []) : r[k]);
    return { __proto__: null, left: +g('left'), top: +g('top'), width: +g('width'), height: +g('height') };
  }
  const sizeGet = (k) => {
    try {
      const d = Object.getOwnPropertyDescriptor(root, k);
      return d && typeof d.get === 'function' ? d.get : null;
    } catch (e) { return null; }
  };
  const innerW = sizeGet('innerWidth'), innerH = sizeGet('innerHeight');

  // tainted reports whether el is tainted: one a secret was typed into,
  // or a text field that holds a value of one that left its document
  // (lost), which it becomes tainted for.
  function tainted(el) {
    try { if (apply(taintHas, taintSet, [el])) return true; } catch (e) { return false; }
    if (lost.length && holdsLost(el)) {
      taint(el);
      return true;
    }
    return false;
  }

  // Replacement. A page may replace the field a secret was typed into
  // with a new one holding its value (or a text that contains it), which
  // nothing tainted. So while a tainted field is in its document the
  // observer keeps its last value (taintVals, read at every input event,
  // in the capture phase of the window, and at every call of the API);
  // once it has left, every input and textarea whose value contains that
  // value (lost) is tainted too. The values stay in this closure.
  const taintVals = bare();
  const lost = bare();
  const valueGet = (C) => protoGet(C && C.prototype, 'value');
  const inputValue = valueGet(root.HTMLInputElement), areaValue = valueGet(root.HTMLTextAreaElement);
  const strIncludes = String.prototype.includes;

  // fieldValue is the value of an input or textarea, else null.
  function fieldValue(el) {
    const t = lname(el);
    const g = t === 'input' ? inputValue : t === 'textarea' ? areaValue : null;
    if (!g) return null;
    try {
      const v = apply(g, el, []);
      return typeof v === 'string' ? v : null;
    } catch (e) { return null; }
  }

  function holdsLost(el) {
    const v = fieldValue(el);
    if (!v) return false;
    for (let i = 0; i < lost.length; i++) {
      if (apply(strIncludes, v, [lost[i]])) return true;
    }
    return false;
  }

  // refreshTaint keeps the last value of every tainted field still in its
  // document, and moves that of one that left to lost.
  function refreshTaint() {
    for (let i = 0; i < taintList.length; i++) {
      const v = taintVals[i];
      if (connected(taintList[i])) {
        const now = fieldValue(taintList[i]);
        if (now) taintVals[i] = now;
      } else if (v) {
        let known = false;
        for (let j = 0; j < lost.length && !known; j++) known = lost[j] === v;
        if (!known) put(lost, v);
        taintVals[i] = '';
      }
    }
  }

  // Typing a secret in two steps. The Playwright driver checks the focus
  // and taints the element (checkFocus with secret), then sends the keys
  // in another step; a page may move the focus in between. So checkFocus
  // with secret arms the observer: until typed() disarms it, every
  // element a trusted input goes to (beforeinput and input, in the capture
  // phase of the window, before any page listener there) is tainted, and
  // typed() fails with target_changed if one was not the checked element,
  // or if none was.
  //
  // Only trusted events say where keys went: an input event a page script
  // dispatches (a handler that tells a hidden field about the change) is
  // neither a stray nor a hit, and taints nothing. An event whose target
  // contains the checked element (the editing host of a contenteditable
  // element the selector found inside it) reached it.
  let typingInto = null, strays = 0, hits = 0;
  const pathOf = root.Event ? root.Event.prototype.composedPath : null;
  // isTrusted is an own unforgeable property of every event: a page can
  // neither redefine nor fake it.
  const nodeContains = root.Node ? root.Node.prototype.contains : null;

  function reaches(t, el) {
    if (t === el) return true;
    try { return nodeContains ? apply(nodeContains, t, [el]) === true : false; } catch (err) { return false; }
  }

  function onInput(e) {
    let trusted = false;
    try { trusted = e.isTrusted === true; } catch (err) { trusted = false; }
    if (typingInto && trusted) {
      let t = null;
      try { t = pathOf ? apply(pathOf, e, [])[0] : e.target; } catch (err) { t = null; }
      if (t && isElement(t)) {
        taint(t);
        if (reaches(t, typingInto)) hits++; else strays++;
      } else {
        strays++;
      }
    }
    refreshTaint();
  }

  // listen adds onInput to the window w (capture phase).
  function listen(w) {
    apply(origAdd || w.addEventListener, w, ['beforeinput', onInput, true]);
    apply(origAdd || w.addEventListener, w, ['input', onInput, true]);
  }
  try { listen(root); } catch (e) { /* no window: the API's calls refresh */ }

  // armTyping starts watching where the keys for el go (see above).
  function armTyping(el) {
    typingInto = el;
    strays = 0;
    hits = 0;
  }

  // typed ends what armTyping started: the input must have reached the
  // checked element, and no other. (Where the focus is now says nothing:
  // a page may move it on once the field is filled, as one-time-code
  // boxes do; keys that went into a frame of another origin, which the
  // observer cannot see, leave no input here.)
  function typed(sel, expect) {
    return result(() => {
      const el = typingInto, n = strays, h = hits;
      typingInto = null;
      strays = 0;
      hits = 0;
      if (!el) throw new Fail('internal', 'typed without a checked element', 0, true);
      if (n > 0) throw new Fail('target_changed', 'the keys went to another element than the checked one (it is tainted too)', 0, true);
      if (h === 0) throw new Fail('target_changed', 'the keys did not reach the checked element', 0, true);
      return {};
    });
  }

  // taintedWithin reports whether el or an element it is inside (across
  // shadow roots and same-origin frames) is tainted: for the entry points
  // that start at an element (describe, extract) rather than walk down to
  // it from the top as observe does.
  function taintedWithin(el) {
    const chain = chainOf(el);
    for (let j = 0; j < chain.length; j++) {
      if (tainted(chain[j].el)) return true;
    }
    return false;
  }

  function taint(el) {
    try { if (apply(taintHas, taintSet, [el])) return; } catch (e) { return; }
    apply(taintAdd, taintSet, [el]);
    put(taintList, el);
    put(taintVals, fieldValue(el) || '');
    try { watch(chainOf(el)); } catch (e) { /* maskRects watches again, and fails */ }
    // A field in a frame: its input events reach that frame's window only.
    try {
      const w = winOf(el);
      if (w !== root) listen(w);
    } catch (e) { /* the API's calls refresh */ }
  }

  function connected(el) {
    try { return connectedGet ? apply(connectedGet, el, []) === true : el.isConnected === true; } catch (e) { return false; }
  }

  // Drawn outside its box. A tainted element, or an element it is inside,
  // may be drawn with a style that paints its content (the secret)
  // somewhere its box does not cover: a reflection, a shadow, a filter
  // (drop-shadow, blur), a blend with what is around it, or a mask or
  // clip-path (an SVG one may paint elsewhere). text-shadow is checked on
  // the tainted element only: it is inherited, so its computed value
  // there already holds what it got from around it (and form fields
  // reset it). A filter on <html> or <body> that only changes colours
  // (COLOUR_FILTER: invert, grayscale...; dark-mode sites and extensions
  // set one) keeps every pixel where it was; any other filter there, and
  // any filter at all on another element, does not pass. Inside a frame, a frame
  // element (or an element around it) that is scaled, rotated, skewed or
  // zoomed draws the frame's content at other coordinates than its
  // offset says. maskRects refuses the screenshot then (outsideOf): it
  // does not guess where the pixels went. The style is read with the
  // getComputedStyle and getPropertyValue taken at install.
  const gcs = typeof root.getComputedStyle === 'function' ? root.getComputedStyle : null;
  const propOf = root.CSSStyleDeclaration ? root.CSSStyleDeclaration.prototype.getPropertyValue : null;
  const reTest = RegExp.prototype.test;
  // PAINT_PROPS: [property, the only value that keeps the content in the
  // box] for every element around the tainted element; OWN_PAINT_PROPS
  // for the tainted element itself (the same and text-shadow).
  const PAINT_PROPS = [
    ['filter', 'none'], ['-webkit-box-reflect', 'none'],
    ['mask-image', 'none'], ['clip-path', 'none'], ['mix-blend-mode', 'normal'],
  ];
  const OWN_PAINT_PROPS = [
    ['text-shadow', 'none'], ['filter', 'none'], ['-webkit-box-reflect', 'none'],
    ['mask-image', 'none'], ['clip-path', 'none'], ['mix-blend-mode', 'normal'],
  ];
  // COLOUR_FILTER matches a computed filter made only of functions that
  // change a pixel's colour, never its place (no url(), blur() or
  // drop-shadow(): their arguments would hold parentheses or their names
  // are not listed).
  const COLOUR_FILTER = /^(\s*(invert|grayscale|brightness|contrast|hue-rotate|saturate|sepia|opacity)\([-+0-9.e%a-z ]*\))+\s*$/;
  // FRAME_PROPS: the same for a frame element on the way up and the
  // elements around it; a transform may only translate (its box, and with
  // it the frame's offset, moves; its content is not scaled).
  const FRAME_PROPS = [['scale', 'none'], ['rotate', 'none'], ['zoom', '1']];
  const TRANSLATION = /^(none|matrix\(1, 0, 0, 1, [-0-9.e]+, [-0-9.e]+\))$/;

  function cssOf(el, p) {
    let v = null;
    try {
      const st = gcs ? apply(gcs, root, [el]) : winOf(el).getComputedStyle(el);
      v = propOf ? apply(propOf, st, [p]) : st.getPropertyValue(p);
    } catch (e) { v = null; }
    if (typeof v !== 'string') throw new Fail('internal', 'the style of a field a secret was typed into cannot be read: the screenshot is refused');
    return v;
  }

  // chainOf lists el and every element it is inside, up to the top
  // document, across shadow roots and same-origin frames: items {el,
  // framed}, framed once the way up has left el's own document.
  function chainOf(el) {
    const out = bare();
    let n = el, framed = false, guard = 0;
    while (n && guard++ < 4096) {
      if (isElement(n)) put(out, { __proto__: null, el: n, framed });
      if (n.parentNode) { n = n.parentNode; continue; }
      if (n.nodeType === 11 && n.host) { n = n.host; continue; }
      if (n.nodeType === 9) {
        let fe = null;
        try { fe = n.defaultView ? n.defaultView.frameElement : null; } catch (e) { fe = null; }
        n = fe;
        framed = true;
        continue;
      }
      break;
    }
    return out;
  }

  // outsideOf returns why an element of chain (chainOf) may draw the first
  // outside its box (see above), or '' when none does.
  function outsideOf(chain) {
    for (let j = 0; j < chain.length; j++) {
      const n = chain[j].el;
      const t = lname(n), page = t === 'html' || t === 'body';
      const props = j === 0 ? OWN_PAINT_PROPS : PAINT_PROPS;
      for (let i = 0; i < props.length; i++) {
        const p = props[i][0], v = cssOf(n, p);
        if (v === '' || v === props[i][1]) continue;
        if (page && p === 'filter' && apply(reTest, COLOUR_FILTER, [v])) continue;
        return p + ': ' + cut(v, 64) + ' on ' + short(n);
      }
      if (chain[j].framed) {
        for (let i = 0; i < FRAME_PROPS.length; i++) {
          const p = FRAME_PROPS[i][0], v = cssOf(n, p);
          if (v !== '' && v !== FRAME_PROPS[i][1]) return p + ': ' + cut(v, 64) + ' on ' + short(n) + ', around a frame';
        }
        const tf = cssOf(n, 'transform');
        if (!apply(reTest, TRANSLATION, [tf])) return 'transform: ' + cut(tf, 64) + ' on ' + short(n) + ', around a frame';
      }
    }
    return '';
  }

  // Moves between two answers. The boxes of a tainted element before and
  // after a capture may agree while it was elsewhere in between (a page
  // toggling it A-B-A). So from the time an element is tainted, one
  // MutationObserver of this closure watches the attributes (style,
  // class, any other a selector could match) of it and of every element
  // it is inside, and maskRects reports how many changes it has seen
  // (changes) and whether an animation that may move one of them runs
  // (animating); the driver refuses a screenshot when the count differs
  // between its two answers or such an animation runs. A change of an
  // attribute of <html> or <body> (sites toggle their classes all the
  // time) counts only when a tainted element moved with it: the watcher
  // measures them then (placement) and compares with where they were at
  // the last measure. An animation counts unless all it animates is in
  // STILL_ANIMS (colours, opacity...): a body whose background colour
  // cycles forever keeps no screenshot out. Not seen: a change to a style
  // sheet (a <style> element's text, insertRule), which only the boxes
  // catch.
  const MO = typeof root.MutationObserver === 'function' ? root.MutationObserver : null;
  const moObserve = MO ? MO.prototype.observe : null;
  const moTake = MO ? MO.prototype.takeRecords : null;
  const animsOf = root.Element && typeof root.Element.prototype.getAnimations === 'function' ? root.Element.prototype.getAnimations : null;
  const playStateGet = root.Animation ? protoGet(root.Animation.prototype, 'playState') : null;
  const effectGet = root.Animation ? protoGet(root.Animation.prototype, 'effect') : null;
  const keyframesOf = root.KeyframeEffect ? root.KeyframeEffect.prototype.getKeyframes : null;
  const objKeys = Object.keys;
  let changes = 0;
  // placed is where the tainted elements were at the last measure
  // (placement), '' before the first.
  let placed = '';
  const watcher = MO ? new MO((recs) => { count(recs); }) : null;

  // placement is the boxes (top-level viewport CSS pixels) of the tainted
  // elements in their document, as one string.
  function placement() {
    let out = '';
    for (let i = 0; i < taintList.length; i++) {
      const el = taintList[i];
      if (!connected(el)) { out += 'gone;'; continue; }
      try {
        const r = sides(box(el)), off = frameOffset(el);
        out += (r.left + off.x) + ',' + (r.top + off.y) + ',' + r.width + ',' + r.height + ';';
      } catch (e) { out += 'unknown' + i + ';'; }
    }
    return out;
  }

  // count adds the attribute changes of recs (MutationRecords) to
  // changes: every change of the tainted elements and of the elements
  // around them but <html> and <body>, whose changes count once if a
  // tainted element is no longer where it was.
  function count(recs) {
    let page = false;
    for (let i = 0; i < recs.length; i++) {
      let t = '';
      try { t = lname(recs[i].target); } catch (e) { t = ''; }
      if (t === 'html' || t === 'body') page = true; else changes++;
    }
    if (page) {
      const now = placement();
      if (now !== placed) changes++;
      placed = now;
    }
  }

  // watch makes the watcher see the attributes of every element of chain
  // (again: observing a node twice keeps one registration).
  function watch(chain) {
    if (!watcher) throw new Fail('internal', 'no MutationObserver to watch a field a secret was typed into: the screenshot is refused');
    for (let j = 0; j < chain.length; j++) apply(moObserve, watcher, [chain[j].el, { __proto__: null, attributes: true }]);
  }

  // seen returns the count of changes the watcher has seen so far.
  // (It takes the changes not yet delivered, then measures where the
  // tainted elements are: a later change of <html> or <body> is compared
  // with that.)
  function seen() {
    if (watcher) count(apply(moTake, watcher, []));
    placed = placement();
    return changes;
  }

  // STILL_ANIMS are the properties (as getKeyframes names them) whose
  // animation cannot move an element or what is drawn of it: colours,
  // opacity, backgrounds, shadows of boxes, outlines, visibility. Any
  // other, known or not, may (transform, translate, scale, rotate, top,
  // left, margins, paddings, width, height, inset, position, filter,
  // text-shadow, custom properties a var() may use...).
  const STILL_ANIMS = {
    __proto__: null,
    color: 1, backgroundColor: 1, backgroundImage: 1, backgroundPosition: 1, backgroundSize: 1,
    opacity: 1, visibility: 1, boxShadow: 1, caretColor: 1, accentColor: 1,
    borderColor: 1, borderTopColor: 1, borderRightColor: 1, borderBottomColor: 1, borderLeftColor: 1,
    outlineColor: 1, outlineWidth: 1, outlineOffset: 1, outlineStyle: 1,
    textDecorationColor: 1, fill: 1, stroke: 1, stopColor: 1, floodColor: 1, lightingColor: 1,
  };
  const KEYFRAME_KEYS = { __proto__: null, offset: 1, computedOffset: 1, easing: 1, composite: 1 };

  // mayMove reports whether the animation a may move an element or its
  // content: it animates a property not in STILL_ANIMS, or what it
  // animates cannot be read.
  function mayMove(a) {
    try {
      const fx = effectGet ? apply(effectGet, a, []) : a.effect;
      if (!fx) return false;
      if (!keyframesOf) return true;
      const kfs = apply(keyframesOf, fx, []);
      for (let i = 0; i < kfs.length; i++) {
        const ks = objKeys(kfs[i]);
        for (let k = 0; k < ks.length; k++) {
          if (KEYFRAME_KEYS[ks[k]] !== 1 && STILL_ANIMS[ks[k]] !== 1) return true;
        }
      }
      return false;
    } catch (e) { return true; }
  }

  // animating reports whether an animation or transition that may move
  // it (mayMove) runs on an element of chain.
  function animating(chain) {
    if (!animsOf) return false;
    for (let j = 0; j < chain.length; j++) {
      const list = apply(animsOf, chain[j].el, []);
      for (let i = 0; i < list.length; i++) {
        const st = playStateGet ? apply(playStateGet, list[i], []) : list[i].playState;
        if ((st === 'running' || st === 'pending') && mayMove(list[i])) return true;
      }
    }
    return false;
  }

  // MAX_MASKS bounds the boxes one maskRects reports; a page with more
  // sensitive fields than this (or more elements than the walk's ceiling)
  // cannot be masked, and its screenshot fails rather than go out unmasked.
  const MAX_MASKS = 10000;

  function box(el) {
    return boxOf ? apply(boxOf, el, []) : el.getBoundingClientRect();
  }

  // contentBox is the box of what el holds, which may overflow el's own
  // box (a contenteditable element's text); null for a form field.
  function contentBox(el) {
    const t = lname(el);
    if (t === 'input' || t === 'textarea' || t === 'select') return null;
    try {
      if (!RangeOf) return null;
      const range = new RangeOf();
      apply(rangeSelect, range, [el]);
      return apply(rangeBox, range, []);
    } catch (e) { return null; }
  }

  // maskRects answers {rects, taint, vw, vh}: rects are the boxes of the
  // sensitive fields and of everything inside a tainted element, found by
  // walking the page; taint are the boxes of the tainted elements and
  // their content, measured directly; vw and vh are the viewport's size.
  // All in top-level viewport CSS pixels. The driver refuses a screenshot
  // during which a tainted element moved (its taint boxes before and
  // after differ).
  function maskRects(o) {
    return result(() => {
      const opts = normOpts(o);
      const isSensitive = makeSensitive(opts.sensitive);
      // The lists and boxes have no prototype and grow by put: a page's
      // Array.prototype setters, push or toJSON do not reach them.
      const rects = bare(), taintRects = bare();
      const addTo = (list, rect, off) => {
        let r = null;
        try { r = rect ? sides(rect) : null; } catch (e) { throw new Fail('internal', 'a box to mask cannot be read: the screenshot is refused'); }
        if (!(r && r.width > 0 && r.height > 0)) return;
        if (rects.length + taintRects.length >= MAX_MASKS) throw new Fail('internal', 'more than ' + MAX_MASKS + ' fields to mask: the screenshot is refused');
        put(list, { __proto__: null, x: r.left + off.x, y: r.top + off.y, width: r.width, height: r.height });
      };
      const add = (r, off) => addTo(rects, r, off);
      const max = LIMITS.maxElements[1];
      let walked = 0;
      // Items: [node, frame offset, inside a tainted element].
      const stack = bare();
      const push = (n, off, inTaint) => put(stack, { __proto__: null, n, off, inTaint });
      push(root.document, { x: 0, y: 0 }, false);
      while (stack.length) {
        const it = apply(arrPop, stack, []);
        const n = it.n, off = it.off, inTaint = it.inTaint;
        if (n.nodeType === 9 || n.nodeType === 11) {
          const kids = n.childNodes;
          for (let i = kids.length - 1; i >= 0; i--) push(kids[i], off, inTaint);
          continue;
        }
        if (!isElement(n)) continue;
        if (++walked > max) throw new Fail('internal', 'the page has more than ' + max + ' elements: the screenshot cannot be masked and is refused');
        const t = tainted(n);
        if (inTaint || (!t && isSensitive(n))) add(box(n), off);
        const under = inTaint || t;
        if (isFrame(n)) {
          const fd = frameDoc(n);
          if (fd && fd.documentElement) push(fd, frameOffset(fd.documentElement), under);
          continue;
        }
        if (n.shadowRoot) push(n.shadowRoot, off, under);
        const kids = n.childNodes;
        for (let i = kids.length - 1; i >= 0; i--) push(kids[i], off, under);
      }
      // The tainted elements last: the walk may have tainted more (a
      // field holding a lost value).
      let moving = false;
      for (let i = 0; i < taintList.length; i++) {
        const el = taintList[i];
        if (!connected(el)) continue;
        const chain = chainOf(el);
        const why = outsideOf(chain);
        if (why) throw new Fail('internal', 'a field a secret was typed into may be drawn outside its box (' + why + '): the screenshot is refused');
        watch(chain);
        if (!moving && animating(chain)) moving = true;
        const off = frameOffset(el);
        addTo(taintRects, box(el), off);
        addTo(taintRects, contentBox(el), off);
      }
      let vw = 0, vh = 0;
      try {
        vw = innerW ? apply(innerW, root, []) : root.innerWidth;
        vh = innerH ? apply(innerH, root, []) : root.innerHeight;
      } catch (e) { vw = 0; vh = 0; }
      return { __proto__: null, rects, taint: taintRects, vw: (+vw) || 0, vh: (+vh) || 0, changes: seen(), animating: moving };
    });
  }
