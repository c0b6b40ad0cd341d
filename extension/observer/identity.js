  // observer/identity.js: a part of the observer, whole statements of the
  // function head.js opens (extension/embed.go joins the parts in order).
  // ---------------------------------------------------------------------
  // Identity: is the element a selector resolves to now the one the last
  // observe listed under it, as it was listed? The session keeps running a
  // batch of actions planned on an observation while each next target is
  // still that element, under the role and name the model saw, and on top
  // where it would be clicked (it judges every action on its current facts
  // all the same). listed maps each affordance selector of the last
  // observe to [its element, the role and the name listed, what the walk
  // found about it (tainted, sensitive, inside a sensitive element)];
  // each observe replaces it. The Map and its methods are taken at
  // install, before any page script runs.
  const IdMap = Map, idGet = Map.prototype.get, idSet = Map.prototype.set, idHas = Map.prototype.has;
  let listed = null;
  // listedNaming is how the last observe named its affordances: the
  // bound of a name and the session's sensitive fields.
  let listedNaming = null;

  // listAffordances remembers the elements behind the affordances an
  // observe lists ({c: {el, tnt, sens, inMask}, sel, role, name} items),
  // named with max and isSensitive.
  function listAffordances(kept, max, isSensitive) {
    const m = new IdMap();
    for (let i = 0; i < kept.length; i++) {
      const k = kept[i];
      apply(idSet, m, [k.sel, [k.c.el, k.role || '', k.name || '', { tnt: k.c.tnt, sens: k.c.sens, inMask: k.c.inMask }]]);
    }
    listed = m;
    listedNaming = { max, isSensitive };
  }

  // observedAs says what el, the element sel resolves to now, is to the
  // last observe: "same" (the element it listed under sel, still visible,
  // enabled, of the role and name listed, and not covered), "replaced"
  // (another element: the page replaced it), "hidden", "disabled",
  // "changed" (its role or name is not the one listed: a "Next" button
  // the page turned into "Place order"), "covered" (another element is on
  // top at its centre, where a click would land; an element outside the
  // viewport is not covered: it is scrolled into view first), or
  // "unknown" (sel was not an affordance selector of the last observe, or
  // no observe ran in this document).
  function observedAs(sel, el) {
    if (!listed || !apply(idHas, listed, [sel])) return 'unknown';
    const [was, role, name, found] = apply(idGet, listed, [sel]);
    if (was !== el) return 'replaced';
    if (!visible(el)) return 'hidden';
    let disabled = false;
    try { disabled = el.matches(':disabled'); } catch (e) { disabled = false; }
    if (disabled || String(attr(el, 'aria-disabled') || '').toLowerCase() === 'true') return 'disabled';
    if ((roleOf(el) || '') !== role) return 'changed';
    const now = affordanceName({ el, tnt: found.tnt, sens: found.sens, inMask: found.inMask }, listedNaming.max, listedNaming.isSensitive);
    if (now !== name) return 'changed';
    if (covered(el)) return 'covered';
    return 'same';
  }

  // covered reports whether another element is on top at the point a
  // click on el would land (clickPoint), hit-tested as prepareClick does;
  // false when that point is outside the viewport.
  function covered(el) {
    let p;
    try { p = clickPoint(el); } catch (e) { return false; }
    if (p.x < 0 || p.y < 0 || p.x >= root.innerWidth || p.y >= root.innerHeight) return false;
    const hit = deepHit(p.x, p.y);
    return !hit || !composedContains(el, hit.el);
  }
