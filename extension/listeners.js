// listeners.js: the one piece of aegis that runs in the page's main world.
//
// The observer (observer.js) runs in the extension's isolated world, where
// the page's own addEventListener calls are invisible: an element that a
// page script made clickable with addEventListener('click', ...) would be
// missing from the affordances. This script, registered by the service
// worker for the session's allowed origins only (document_start, every
// frame), wraps EventTarget.prototype.addEventListener before any page
// script runs and remembers every element that gets a click-like listener.
// The observer asks about one element by dispatching a cancelable
// "__aegis_listener_query" event on it; this script answers yes by
// cancelling it. Nothing else crosses the worlds.
//
// A page can answer the query itself (claiming an element is clickable,
// which it could make true anyway) or hide its listeners from it (which
// only hides them from the affordances): neither gives it anything.
(function (root) {
  'use strict';
  const QUERY = '__aegis_listener_query';
  if (root[QUERY]) return;
  try {
    Object.defineProperty(root, QUERY, { value: true, writable: false, configurable: false, enumerable: false });
  } catch (e) {
    return;
  }
  const CLICK_EVENTS = new Set(['click', 'dblclick', 'auxclick', 'mousedown', 'mouseup',
    'pointerdown', 'pointerup', 'touchstart', 'touchend']);
  const proto = root.EventTarget && root.EventTarget.prototype;
  const orig = proto && proto.addEventListener;
  if (typeof orig !== 'function') return;
  const apply = Reflect.apply;
  const marked = new WeakSet();
  const answer = (ev) => { ev.preventDefault(); };
  function mark(el) {
    if (marked.has(el)) return;
    marked.add(el);
    apply(orig, el, [QUERY, answer]);
  }
  const wrapped = {
    addEventListener(type, listener, options) {
      try {
        if (CLICK_EVENTS.has(type) && this && this.nodeType === 1) mark(this);
      } catch (e) { /* hostile getter: ignore */ }
      return apply(orig, this, arguments);
    },
  }.addEventListener;
  try {
    Object.defineProperty(proto, 'addEventListener', { value: wrapped, writable: true, configurable: true, enumerable: true });
  } catch (e) { /* frozen prototype: no listener detection */ }
})(globalThis);
