  // observer/clicklisteners.js: a part of the observer, whole statements of the
  // function head.js opens (extension/embed.go joins the parts in order).
  // ---------------------------------------------------------------------
  // Click listeners added by page scripts. In the page's main world (the
  // Playwright driver) this sees every addEventListener; in an isolated
  // world it sees nothing and costs nothing.
  const listened = new WeakSet();
  const CLICK_EVENTS = new Set(['click', 'dblclick', 'auxclick', 'mousedown', 'mouseup',
    'pointerdown', 'pointerup', 'touchstart', 'touchend']);
  try {
    const proto = root.EventTarget && root.EventTarget.prototype;
    const orig = proto && proto.addEventListener;
    origRemove = proto && proto.removeEventListener;
    if (typeof orig === 'function') {
      origAdd = orig;
      const wrapped = {
        addEventListener(type, listener, options) {
          try {
            if (CLICK_EVENTS.has(type) && this && this.nodeType === 1) listened.add(this);
          } catch (e) { /* hostile getter: ignore */ }
          return apply(orig, this, arguments);
        },
      }.addEventListener;
      Object.defineProperty(proto, 'addEventListener', {
        value: wrapped, writable: true, configurable: true, enumerable: true,
      });
    }
  } catch (e) { /* frozen prototype: no listener detection */ }

  // In the extension's isolated world the page's own addEventListener
  // calls are not seen above. There, listeners.js (in the page's main
  // world) remembers them and answers a cancelable query event dispatched
  // on the element by cancelling it. Off in the page's main world (the
  // Playwright driver), where chrome.runtime.id does not exist.
  const LISTENER_QUERY = '__aegis_listener_query';
  let isolatedWorld = false;
  try {
    isolatedWorld = !!(root.chrome && root.chrome.runtime && typeof root.chrome.runtime.id === 'string');
  } catch (e) { isolatedWorld = false; }
  function mainWorldListener(el) {
    try {
      return !el.dispatchEvent(new root.CustomEvent(LISTENER_QUERY, { cancelable: true, bubbles: false, composed: false }));
    } catch (e) { return false; }
  }

  function hasClickListener(el) {
    if (listened.has(el)) return true;
    if (isolatedWorld && mainWorldListener(el)) return true;
    try {
      const win = el.ownerDocument && el.ownerDocument.defaultView;
      if (win && win !== root) {
        const other = win[name];
        if (other && typeof other.hasClickListener === 'function') return other.hasClickListener(el);
      }
    } catch (e) { /* cross-origin */ }
    return false;
  }
