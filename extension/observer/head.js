// observer.js: the one aegis page observer.
//
// Both aegis drivers see pages through this script: the Chrome extension loads
// it as an MV3 content script, and the Playwright driver injects it into
// every frame (as an init script, before any page script runs) and calls it
// with page.evaluate. Plain JavaScript, no build step, no dependencies.
//
// It is one function written in the files of extension/observer/, one
// responsibility each; this one (head.js) holds this comment, opens the
// function and declares its constants. The extension package
// (extension/embed.go) joins the parts in a fixed order into the one
// script both drivers run, which the extension ships as observer.js.
//
// It installs one frozen, non-writable, non-configurable global object (named
// "__aegis" by default; the Playwright driver renames it per session so that
// a page can neither predict nor pre-empt it). Every function of that object
// returns a JSON string (observePacked a promise of one, maybe compressed),
// which the Go side parses strictly:
//
//   observe(opts)                  the page part of a BrowserObservation
//   observePacked(opts)            the same, compressed (a promise; see below)
//   describe(selector, opts)       the one element a selector resolves to, the
//                                  origin of the top-level page, and whether
//                                  it is the element the last observe listed
//                                  under that selector
//   check(selector, expect)        has the element (or the page's origin)
//                                  changed since describe reported expect?
//   prepareClick(selector, expect) check, scroll into view, hit-test, arm
//   finishClick(withheld, after)   did the trusted click reach the element?
//                                  (a note when the page covered or removed
//                                  it after the press; see arm)
//   onTop(x, y, target, next)      may the extension's executor dispatch
//                                  next at (x, y) to target? (see there)
//   prepareType(selector, expect)  check, focus and select the contents
//   checkFocus(selector, expect, secret) is the focus still on the described
//                                  element? (secret: taint it, see Masking)
//   setValue(selector, text, expect, secret) set the value of date/time/
//                                  color/range inputs (secret: taint it)
//   select(selector, value, expect) choose an option by value, else by label
//   scroll(dy)                     scroll the page by dy CSS pixels
//   extract(kind, selector, opts)  text, table rows, or links
//   rect(selector)                 the element's box in top-level viewport px
//   maskRects(opts)                the boxes a screenshot must be painted
//                                  over (tainted elements, sensitive fields)
//   typed(selector, expect)        after checkFocus with secret and the keys:
//                                  did they all go to the checked element?
//   split(selector)                the selector's segments (for tests)
//   invoke(json)                   one of the above, by name, with arguments
//                                  ([name, [args]]: how the Playwright
//                                  driver calls, see api.js)
//
// Time of check is time of use: expect, when given, is what describe
// reported ({element, pageOrigin, sensitive}); the functions that act
// resolve the element, compare its facts and the page's origin with it in
// the same step, and fail with target_changed, doing nothing, if any
// differs. A click also re-checks at the first trusted event that reaches
// the element, so a page that swaps it after the check stops its own click.
//
// Selector syntax: a selector is one or more CSS selectors joined by ">>>".
// The first segment is matched in the top document; each ">>>" enters the
// element the previous segment matched: its open shadow root, or, for an
// <iframe> or <frame>, its same-origin document. Every segment must match
// exactly one element in its scope: zero is element_not_found, several is
// ambiguous_selector, never a guess. ">>>" inside quotes, brackets,
// parentheses or after a backslash does not split.
//
// Masking: values of sensitive fields (password inputs, autocomplete
// cc-*, one-time-code, current-password and new-password, names that look
// like secrets, and whatever matches the policy's sensitive selectors) are
// replaced by "[masked]" in the snapshot and never reach the text, the
// affordances or an extraction. This happens here, in the page, before
// anything leaves it. An element a secret was typed into (checkFocus or
// setValue with secret) is tainted: masked from then on like a sensitive
// field, and more (its attributes but id, name and type), whatever its
// type becomes; and screenshots are painted over every tainted element
// and sensitive field (maskRects; mask.js says how).
(function (root, name) {
  'use strict';
  if (Object.prototype.hasOwnProperty.call(root, name)) return;

  const VERSION = '1';
  const MASK = '[masked]';
  const TEXT_MARKER = '\n[aegis: text truncated]';
  const SNAP_MARKER = '#truncated';
  const SPLIT = '>>>';
  const MAX_SELECTOR_INPUT = 4096;
  const MAX_SEGMENTS = 32;

  // Defaults and hard ceilings (the schema's maxima). The Go side sends its
  // own values; these keep the observer safe when called directly.
  const LIMITS = {
    maxElements: [50000, 200000],
    maxDepth: [256, 1024],
    maxTextChars: [262144, 1048576],
    maxSnapshotChars: [1048576, 4194304],
    maxAffordances: [2000, 5000],
    maxAffordanceText: [200, 2000],
    maxSelector: [512, 2048],
    maxAttr: [512, 4096],
    maxTextNode: [4096, 65536],
  };
  // Structural selectors are unique by construction (anchored at :root or
  // at an id counted once, then child steps that each pick one child). The
  // ones anchored at the top of a shadow root rely on :not(* > *) and are
  // also checked with querySelectorAll when their root has at most this many
  // elements.
  const VERIFY_BELOW = 10000;

  // Builtins the observer's answers and its taint depend on, taken when it
  // installs: before any page script runs (a content script in the
  // extension's isolated world, which no page script reaches anyway; an
  // init script in the page's main world in the Playwright driver, where a
  // page may later replace JSON.stringify, Object.assign, the array
  // iterator or a prototype's getters). See result (helpers.js), invoke
  // (api.js) and mask.js.
  const apply = Reflect.apply;
  const jsonStringify = JSON.stringify;
  const jsonParse = JSON.parse;
  const assign = Object.assign;
  const defineProp = Reflect.defineProperty;
  const ownDesc = Reflect.getOwnPropertyDescriptor;
  const setProto = Reflect.setPrototypeOf;
  // own returns o's own data property k, or undefined: never a getter's
  // or a prototype's value, which a page may have put there.
  function own(o, k) {
    if (o === null || typeof o !== 'object') return undefined;
    const d = ownDesc(o, k);
    return d && 'value' in d ? d.value : undefined;
  }
  // put appends v to the array list as an own property: never through a
  // setter a page may have defined on Array.prototype for that index, nor
  // through a replaced Array.prototype.push.
  function put(list, v) {
    defineProp(list, list.length, { __proto__: null, value: v, writable: true, enumerable: true, configurable: true });
  }
  // bare returns a new array without a prototype: JSON.stringify finds
  // no toJSON on it (a page may define Array.prototype.toJSON).
  function bare() {
    const a = [];
    setProto(a, null);
    return a;
  }
  const toWellFormed = typeof String.prototype.toWellFormed === 'function' ? String.prototype.toWellFormed : null;
  // The origin getter of the window, taken before any page script runs:
  // window.origin itself is a property a page may overwrite.
  let originGet = null;
  try {
    const od = Object.getOwnPropertyDescriptor(root, 'origin');
    if (od && typeof od.get === 'function') originGet = od.get;
  } catch (e) { originGet = null; }
  let origAdd = null, origRemove = null;
  const now = () => (root.performance && root.performance.now ? root.performance.now() : Date.now());
