// port.js: the native port to the aegis host, part of the service worker
// (background.js loads it with importScripts): opening and closing it, the
// calls and responses on it, the routing of the host's messages (requests
// to tabs.js, events to session.js), and the driver's port
// (connectDriverPort).
'use strict';

// host is the open connection to the aegis host, or null.
let host = null;

// openPort opens a native port to the aegis host. When the host goes, the
// calls still pending are refused, with the host's own word on why when it
// said one (host.error), and then onGone(h) runs.
function openPort(onGone) {
  const port = chrome.runtime.connectNative(HOST_NAME);
  const h = { port, nextId: 1, pending: new Map(), closed: false, error: '', tabs: new Set(), origins: new Set() };
  port.onMessage.addListener((m) => onHostMessage(h, m));
  port.onDisconnect.addListener(() => {
    const err = chrome.runtime.lastError;
    h.closed = true;
    h.error = h.lastError || (err && err.message) || 'the aegis host disconnected';
    for (const p of h.pending.values()) p.reject(new ProtoError(CODE.ShuttingDown, h.error));
    h.pending.clear();
    onGone(h);
  });
  return h;
}

function connectHost() {
  const h = openPort((h) => {
    if (host === h) host = null;
    unregisterListeners();
    clearBoundaries(h);
    onHostGone(h);
  });
  host = h;
  return h;
}

// closeHost closes the port from this side.
function closeHost(h) {
  if (h.closed) return;
  h.closed = true;
  h.error = 'closed by the extension';
  for (const p of h.pending.values()) p.reject(new ProtoError(CODE.ShuttingDown, h.error));
  h.pending.clear();
  if (host === h) host = null;
  unregisterListeners();
  clearBoundaries(h);
  try { h.port.disconnect(); } catch (e) { /* gone */ }
}

function post(h, msg) {
  if (h.closed) return;
  msg.v = PROTOCOL;
  try {
    h.port.postMessage(msg);
  } catch (e) {
    h.closed = true;
  }
}

function hostCall(h, method, params) {
  return new Promise((resolve, reject) => {
    if (h.closed) {
      reject(new ProtoError(CODE.ShuttingDown, h.error || 'the aegis host is not connected'));
      return;
    }
    const id = h.nextId++;
    h.pending.set(id, { resolve, reject });
    post(h, { kind: 'request', id, method, params: params || {} });
  });
}

function respond(h, id, result, err) {
  if (err) {
    const code = err instanceof ProtoError ? err.code : CODE.Internal;
    const name = Object.keys(CODE).find((k) => CODE[k] === code) || 'internal';
    post(h, { kind: 'response', id, error: { code, name: snake(name), message: String(err.message || err).slice(0, 2000) } });
  } else {
    post(h, { kind: 'response', id, result: result === undefined ? {} : result });
  }
}

function snake(s) { return s.replace(/[A-Z]/g, (c, i) => (i ? '_' : '') + c.toLowerCase()); }

function onHostMessage(h, m) {
  if (!m || typeof m !== 'object' || m.v !== PROTOCOL) return;
  switch (m.kind) {
    case 'response': {
      const p = h.pending.get(m.id);
      if (!p) return;
      h.pending.delete(m.id);
      if (m.error) p.reject(new ProtoError(m.error.code, m.error.message));
      else p.resolve(m.result);
      return;
    }
    case 'request':
      handleHostRequest(h, m.method, m.params || {}).then(
        (r) => respond(h, m.id, r, null),
        (e) => respond(h, m.id, null, e),
      );
      return;
    case 'event':
      onHostEvent(h, m.event, m.params || {});
  }
}

// connectDriverPort opens a native port on which the host (a test or a
// benchmark, through a relay build of aegis) drives tabs it opens itself,
// with no session: the extension driver's conformance tests use it. It is
// reachable only from the worker's own context (DevTools, the test
// harness), never from a page.
self.connectDriverPort = async function connectDriverPort() {
  const h = connectHost();
  const hello = await hostCall(h, 'hello', { protocol: [PROTOCOL], extension: chrome.runtime.getManifest().version });
  return hello.protocol;
};
