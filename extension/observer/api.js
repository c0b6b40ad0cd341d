  // observer/api.js: a part of the observer, whole statements of the
  // function head.js opens (extension/embed.go joins the parts in order).

  // ---------------------------------------------------------------------
  // The entry points that wrap others: rect, split, observe as JSON; then
  // the packing of observations and the API object.

  function rect(sel) {
    return result(() => {
      const el = resolve(sel);
      if (!visible(el)) throw new Fail('not_interactable', 'the element is hidden or has no size');
      bringIntoView(el);
      // Read with what was taken at install (mask.js): the driver crops
      // the screenshot to this box.
      const r = sides(box(el));
      const off = frameOffset(el);
      const vw = +(innerW ? apply(innerW, root, []) : root.innerWidth), vh = +(innerH ? apply(innerH, root, []) : root.innerHeight);
      const x = Math.max(0, r.left + off.x), y = Math.max(0, r.top + off.y);
      const x2 = Math.min(vw, r.left + r.width + off.x), y2 = Math.min(vh, r.top + r.height + off.y);
      if (x2 <= x || y2 <= y) throw new Fail('not_interactable', 'the element is outside the viewport');
      return { __proto__: null, x, y, width: x2 - x, height: y2 - y };
    });
  }

  // Refused WebRTC attempts: the WebRTC guard (extension/webrtc.js, in the
  // page's main world, in both drivers) dispatches PEER_EVENT on the
  // top-level window (or its own frame's when the top is of another
  // origin) for each attempt, before it throws. notePeer counts it; the
  // listener is added here, when the observer installs, which is at
  // document_start (an init script in the Playwright driver, a registered
  // content script in the extension while WebRTC is off), in the capture
  // phase, so it runs before any listener a page script could add to stop
  // the event. The next observe reports and resets the count
  // (stats.peerRefused).
  const PEER_EVENT = '__aegis_peer_refused';
  let peerRefused = 0;
  function notePeer() {
    if (peerRefused < 1000000) peerRefused++;
  }
  try {
    apply(origAdd || root.addEventListener, root, [PEER_EVENT, notePeer, true]);
  } catch (e) { /* no window: nothing to count */ }
  function takePeer() {
    const n = peerRefused;
    peerRefused = 0;
    return n;
  }

  function splitJSON(sel) { return result(() => ({ segments: split(sel) })); }

  function observeJSON(o) {
    try {
      return observe(o);
    } catch (e) {
      if (e instanceof Fail) return jsonStringify({ ok: false, code: e.code, msg: cut(e.message, 1024) });
      return jsonStringify({ ok: false, code: 'internal', msg: cut(String(e && e.message || e), 1024) });
    }
  }

  // ---------------------------------------------------------------------
  // Packing. The Playwright driver fetches observations with observePacked:
  // observe's JSON compressed with deflate-raw and base64-encoded, about a
  // tenth of its size, which the DevTools protocol, Playwright's driver and
  // its pipe to Go carry much faster than the JSON itself. The observation
  // is taken synchronously, as observe takes it; only the compression
  // waits. What it needs is captured here, before page scripts run. Where
  // something is missing or fails, the answer is observe's plain JSON.

  const PACK_PREFIX = 'deflate-raw;base64,';
  const packing = (() => {
    try {
      const P = {
        CompressionStream: root.CompressionStream,
        Blob: root.Blob,
        Response: root.Response,
        TextEncoder: root.TextEncoder,
        Uint8Array: root.Uint8Array,
        encode: root.TextEncoder.prototype.encode,
        stream: root.Blob.prototype.stream,
        pipeThrough: root.ReadableStream.prototype.pipeThrough,
        arrayBuffer: root.Response.prototype.arrayBuffer,
        subarray: root.Uint8Array.prototype.subarray,
        fromCharCode: String.fromCharCode,
        join: Array.prototype.join,
        btoa: root.btoa,
      };
      for (const k of Object.keys(P)) if (typeof P[k] !== 'function') return null;
      return Object.freeze(P);
    } catch (e) { return null; }
  })();

  async function pack(s) {
    const P = packing;
    const bytes = apply(P.encode, new P.TextEncoder(), [s]);
    const body = apply(P.pipeThrough, apply(P.stream, new P.Blob([bytes]), []), [new P.CompressionStream('deflate-raw')]);
    const u = new P.Uint8Array(await apply(P.arrayBuffer, new P.Response(body), []));
    const parts = [];
    for (let i = 0; i < u.length; i += 0x8000) parts[parts.length] = apply(P.fromCharCode, null, apply(P.subarray, u, [i, i + 0x8000]));
    return apply(P.btoa, root, [apply(P.join, parts, [''])]);
  }

  async function observePacked(o) {
    const s = observeJSON(o);
    if (!packing) return s;
    try {
      return PACK_PREFIX + await pack(s);
    } catch (e) {
      return s;
    }
  }

  // calls are the API's functions, by name, in an object without a
  // prototype (invoke finds nothing a page put on Object.prototype).
  const calls = {
    __proto__: null,
    observe: observeJSON,
    observePacked,
    describe,
    prepareClick,
    finishClick,
    onTop,
    prepareType,
    setValue,
    select,
    scroll,
    extract,
    rect,
    split: splitJSON,
    hasClickListener,
    deepHit,
    deepActive,
    check,
    checkFocus,
    maskRects,
    typed,
  };

  // MAX_ARGS bounds the arguments invoke passes on (no function takes more
  // than four).
  const MAX_ARGS = 8;

  // invoke is how the Playwright driver calls the API from the page's main
  // world, where page scripts run too: s is the JSON text of [name,
  // [arguments]]. It is parsed with the JSON.parse taken at install, its
  // parts are read as own properties by index, and the function is called
  // with Reflect.apply taken at install: never through the array iterator
  // (spread, destructuring), which a page may replace to change or drop an
  // argument (checkFocus's secret, maskRects' options).
  function invoke(s) {
    let m = null;
    try { m = typeof s === 'string' ? jsonParse(s) : null; } catch (e) { m = null; }
    const f = own(m, 0), a = own(m, 1);
    const fn = typeof f === 'string' ? own(calls, f) : undefined;
    if (typeof fn !== 'function' || a === null || typeof a !== 'object') {
      return jsonStringify({ __proto__: null, ok: false, code: 'internal', msg: 'invoke: not a call of the observer' });
    }
    const n = own(a, 'length');
    const args = bare();
    for (let i = 0; typeof n === 'number' && i < n && i < MAX_ARGS; i++) put(args, own(a, i));
    return apply(fn, null, args);
  }

  const api = Object.freeze(assign({ version: VERSION }, calls, { invoke }));
  Object.defineProperty(root, name, { value: api, writable: false, configurable: false, enumerable: false });
})(globalThis, "__aegis");
