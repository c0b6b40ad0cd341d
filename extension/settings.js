// settings.js: the options page's way to the model settings, part of the
// service worker (background.js imports it; session.js accepts the port of
// its own options.html only).
//
// The model settings live in the aegis host's configuration file, never in
// the extension: each command opens a native port of its own (a host
// process of its own, whatever session runs), asks config.get or
// config.set (nativehost/PROTOCOL.md), and closes it. The host validates
// and writes the file; it never sends the API key back, only whether one
// is set.
'use strict';

// connectSettings opens a native port for one settings command. It is not
// the session's connection: it takes no tab requests (its tab set is
// empty, so handleHostRequest refuses them) and closing it touches nothing
// of a running session.
function connectSettings() {
  return openPort(() => {});
}

async function settingsCall(method, params) {
  const h = connectSettings();
  try {
    const hello = await hostCall(h, 'hello', { protocol: [PROTOCOL], extension: chrome.runtime.getManifest().version });
    if (hello.protocol !== PROTOCOL) throw new Error('the aegis host speaks protocol ' + hello.protocol);
    return await hostCall(h, method, params);
  } finally {
    h.closed = true;
    try { h.port.disconnect(); } catch (e) { /* gone */ }
  }
}

// modelOf keeps the members config.set takes, of the types it takes.
function modelOf(m) {
  if (m === null) return null;
  if (!m || typeof m !== 'object') throw new Error('no model settings');
  const str = (v) => (typeof v === 'string' ? v.slice(0, 4096) : '');
  return {
    baseUrl: str(m.baseUrl), model: str(m.model), apiKey: str(m.apiKey),
    clearApiKey: m.clearApiKey === true, azure: m.azure === true, apiVersion: str(m.apiVersion),
  };
}

function optionsPort(port) {
  port.onMessage.addListener((cmd) => {
    const name = cmd && cmd.cmd;
    Promise.resolve()
      .then(() => {
        if (name === 'get') return settingsCall('config.get', {});
        if (name === 'set') return settingsCall('config.set', { model: modelOf(cmd.model) });
        throw new Error('unknown command');
      })
      .then(
        (result) => port.postMessage({ reply: name, ok: true, result }),
        (e) => port.postMessage({ reply: name, ok: false, code: (e && e.code) || 0, error: String((e && e.message) || e) }),
      )
      .catch(() => { /* the page closed */ });
  });
}
