// boundary.js: the network and navigation boundary of a session's tab,
// part of the service worker (background.js loads it with importScripts;
// it uses background.js's ProtoError and CODE, port.js's post and tabs.js's
// originOf).
//
// While the host holds a boundary on a tab (boundary.set, from the
// extension driver when it opens on the tab; boundary.clear when it
// closes, or the conversation ends), the browser itself refuses, for that
// tab, with declarativeNetRequest session rules scoped to it (tabIds):
//   - every request, of every resource type (main_frame and sub_frame
//     included: a rule without resourceTypes skips main_frame), whose URL
//     is not on one of the session's allowed origins (matched on
//     scheme://host:port/, since requestDomains ignore ports); WebSockets
//     are matched as ws/wss on the same host and port;
//   - when the host holds state-changing requests (hold), every request
//     that is not GET, HEAD or OPTIONS, but the one form submission
//     (method and exact URL, query aside) the host judged for the click it
//     is running (tab.call's allow), allowed for that call only.
// Each refusal the browser makes is reported to the host as a
// boundary.refused event (webRequest.onErrorOccurred, error
// net::ERR_BLOCKED_BY_CLIENT). A window the page opens (window.open, a
// link with target=_blank) is added to the rules and closed at once, and
// reported. While any boundary is held, WebRTC may not send UDP outside a
// proxy (chrome.privacy.network.webRTCIPHandlingPolicy), and unless the
// host allows WebRTC (allowWebRTC), the WebRTC guard (webrtc.js, the one
// the Playwright driver runs too) runs in the page's main world of every
// frame of the session's origins from document_start, with the observer in
// the isolated world of the top frame to count what it refused (see
// peerGuards).
//
// Rule priorities: 1 blocks everything of the tab, 2 allows the allowed
// origins (safe methods only when holding), 3 allows the judged form
// submission. The highest matching priority wins.
'use strict';

// ALL_TYPES are every resource type declarativeNetRequest knows: a rule
// that names none skips main_frame, which is why every rule names them.
const ALL_TYPES = ['main_frame', 'sub_frame', 'stylesheet', 'script', 'image', 'font', 'object',
  'xmlhttprequest', 'ping', 'csp_report', 'media', 'websocket', 'webtransport', 'webbundle', 'other'];
const SAFE_METHODS = ['get', 'head', 'options'];
const HELD_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const REFUSED_ORIGIN = 'origin not in the allowlist';
const REFUSED_HELD = 'state-changing requests are held only for predicted form submissions in extension mode';
const REFUSED_POPUP = 'the page opened a new window, which was closed: the session acts on its own tab only';
const PRIO_BLOCK = 1, PRIO_ORIGINS = 2, PRIO_ALLOWANCE = 3;
const MAX_POPUPS = 64;

// boundaries maps a session tab's id to its boundary: {h, tabId, tabs
// (the tab and the popups it opened), origins, hold, ruleIds, allowanceId}.
const boundaries = new Map();
let nextRuleId = 1;
// rulesQueue serializes every change of the session rules.
let rulesQueue = Promise.resolve();

function updateRules(change) {
  const run = rulesQueue.then(() => chrome.declarativeNetRequest.updateSessionRules(change));
  rulesQueue = run.catch(() => {});
  return run;
}

function reEscape(s) { return s.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&'); }

// originRegex matches the URLs of origin o (an http(s) origin), and of
// WebSockets to the same host and port.
function originRegex(o) {
  const u = new URL(o);
  const schemes = u.protocol === 'https:' ? 'https|wss' : 'http|ws';
  return '^(?:' + schemes + ')://' + reEscape(u.host) + '/';
}

function rulesOf(b) {
  const tabIds = Array.from(b.tabs);
  const rules = [{ id: nextRuleId++, priority: PRIO_BLOCK, action: { type: 'block' }, condition: { tabIds, resourceTypes: ALL_TYPES } }];
  const targets = b.origins.length ? b.origins.map(originRegex) : ['^(?:https?|wss?)://'];
  for (const regexFilter of targets) {
    const condition = { tabIds, regexFilter, isUrlFilterCaseSensitive: false, resourceTypes: ALL_TYPES };
    if (b.hold) condition.requestMethods = SAFE_METHODS;
    rules.push({ id: nextRuleId++, priority: PRIO_ORIGINS, action: { type: 'allow' }, condition });
  }
  return rules;
}

// install replaces b's rules by rules for its current tabs.
async function install(b) {
  const rules = rulesOf(b);
  const old = b.ruleIds;
  b.ruleIds = rules.map((r) => r.id);
  await updateRules({ removeRuleIds: old, addRules: rules });
}

// setBoundary (boundary.set) installs the boundary of a tab of the
// host's, replacing an earlier one of the same tab.
async function setBoundary(h, p) {
  checkTab(h, p.tabId);
  if (!Array.isArray(p.origins)) throw new ProtoError(CODE.BadParams, 'origins must be a list');
  const origins = checkOrigins(p.origins);
  if (origins.length !== p.origins.length) throw new ProtoError(CODE.BadParams, 'origins must be at most 64 http(s) origins');
  const old = boundaries.get(p.tabId);
  if (old && old.h !== h) throw new ProtoError(CODE.BadParams, 'tab ' + p.tabId + ' has a boundary of another conversation');
  const b = old || { h, tabId: p.tabId, tabs: new Set([p.tabId]), ruleIds: [], allowanceId: 0, lastURL: '', restoring: null, restoredFrom: '' };
  if (!old) {
    // The page the tab shows now, if allowed, is where a refused
    // navigation sends it back.
    try {
      const t = await chrome.tabs.get(p.tabId);
      const o = originOf(t.url || '');
      if (o && (!origins.length || origins.includes(o))) b.lastURL = t.url;
    } catch (e) { /* checked by the next call */ }
  }
  b.origins = origins;
  b.hold = !!p.hold;
  b.allowWebRTC = p.allowWebRTC === true;
  boundaries.set(p.tabId, b);
  try {
    await install(b);
  } catch (e) {
    boundaries.delete(p.tabId);
    throw new ProtoError(CODE.Internal, 'the boundary could not be installed: ' + String((e && e.message) || e).slice(0, 300));
  }
  await webRTC();
  try {
    await peerGuards();
  } catch (e) {
    // Fail closed: no session runs with WebRTC on that was not allowed.
    await clearBoundary(h, p.tabId);
    throw new ProtoError(CODE.Internal, 'the WebRTC guard could not be registered: ' + String((e && e.message) || e).slice(0, 300));
  }
  if (!b.allowWebRTC && b.lastURL) await guardShown(p.tabId);
  return { rules: b.ruleIds.length };
}

// clearBoundary (boundary.clear) removes the boundary of a tab.
async function clearBoundary(h, tabId) {
  const b = boundaries.get(tabId);
  if (!b || b.h !== h) return {};
  boundaries.delete(tabId);
  const ids = b.ruleIds.concat(b.allowanceId ? [b.allowanceId] : []);
  b.ruleIds = [];
  b.allowanceId = 0;
  try { await updateRules({ removeRuleIds: ids }); } catch (e) { /* cleared at the next start */ }
  await webRTC();
  try { await peerGuards(); } catch (e) { /* unregistered at the next start */ }
  return {};
}

// clearBoundaries removes every boundary of a conversation that ended.
function clearBoundaries(h) {
  for (const b of Array.from(boundaries.values())) {
    if (b.h === h) clearBoundary(h, b.tabId);
  }
}

// withAllowance runs fn with the judged form submission allow (method
// and URL) allowed for the tab, and removes the allowance after.
async function withAllowance(h, tabId, allow, fn) {
  if (allow === undefined || allow === null) return fn();
  const b = boundaries.get(tabId);
  if (!b || b.h !== h) throw new ProtoError(CODE.BadParams, 'an allowance needs a boundary on tab ' + tabId);
  if (typeof allow !== 'object' || typeof allow.method !== 'string' || !HELD_METHODS.has(allow.method) || typeof allow.url !== 'string') {
    throw new ProtoError(CODE.BadParams, 'allow must be {method, url} with a state-changing method');
  }
  let u;
  try { u = new URL(allow.url); } catch (e) { u = null; }
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.search || u.hash || u.username || u.password) {
    throw new ProtoError(CODE.BadParams, 'allow.url must be an http(s) URL without query, fragment or credentials');
  }
  if (b.origins.length && !b.origins.includes(u.origin)) throw new ProtoError(CODE.OriginNotAllowed, 'allow.url is outside the session\'s allowed origins');
  if (b.allowanceId) throw new ProtoError(CODE.BadParams, 'an allowance is already in force on tab ' + tabId);
  const id = nextRuleId++;
  const rule = {
    id, priority: PRIO_ALLOWANCE, action: { type: 'allow' },
    condition: {
      tabIds: [tabId], regexFilter: '^' + reEscape(u.origin + u.pathname) + '(?:[?#]|$)', isUrlFilterCaseSensitive: true,
      requestMethods: [allow.method.toLowerCase()], resourceTypes: ['main_frame', 'sub_frame'],
    },
  };
  b.allowanceId = id;
  try {
    await updateRules({ addRules: [rule] });
  } catch (e) {
    b.allowanceId = 0;
    throw new ProtoError(CODE.Internal, 'the allowance could not be installed: ' + String((e && e.message) || e).slice(0, 300));
  }
  try {
    return await fn();
  } finally {
    if (b.allowanceId === id) b.allowanceId = 0;
    try { await updateRules({ removeRuleIds: [id] }); } catch (e) { /* the tab's rules go with the boundary */ }
  }
}

// A top-level navigation of the session's tab that the boundary refused
// leaves Chrome's error page in place of the page (as a replacement, not a
// history entry): the tab is sent back to the last page it showed on an
// allowed origin, loaded again. navigation.js calls this from its
// webNavigation.onErrorOccurred listener, before it wakes the calls
// waiting on the tab's navigations, so that a waiting call sees
// b.restoring and waits for the page to be back.
//
// A page that navigates away by itself again once loaded (a meta refresh,
// a timer) is sent back once per call of the host, not in a loop: it is
// left on the error page the second time.
function boundaryNavError(d) {
  if (d.frameId !== 0 || d.error !== 'net::ERR_BLOCKED_BY_CLIENT') return;
  const b = boundaries.get(d.tabId);
  if (!b || !b.lastURL) return;
  const url = b.lastURL;
  if (b.restoredFrom === url) return;
  b.restoredFrom = url;
  const n = navOf(d.tabId);
  const loads = n.loads;
  b.restoring = (async () => {
    try {
      await chrome.tabs.update(d.tabId, { url });
      await waitNav(d.tabId, (x) => x.loads > loads || x.removed, 30000);
    } catch (e) { /* the tab is gone */ }
  })();
}

// boundaryCall notes that the host acts on the tab: a refused navigation
// may send it back again.
function boundaryCall(tabId) {
  const b = boundaries.get(tabId);
  if (b) b.restoredFrom = '';
}

// boundaryCommitted remembers the page the session's tab shows, when its
// origin is allowed.
function boundaryCommitted(d) {
  if (d.frameId !== 0) return;
  const b = boundaries.get(d.tabId);
  if (!b) return;
  if (d.url !== b.restoredFrom) b.restoredFrom = '';
  const o = originOf(d.url);
  if (o && (!b.origins.length || b.origins.includes(o))) b.lastURL = d.url;
}

// restored waits (at most ms) until a page the boundary sent the tab back
// to has loaded.
async function restored(tabId, ms) {
  const b = boundaries.get(tabId);
  if (!b || !b.restoring) return;
  const r = b.restoring;
  await Promise.race([r, sleep(ms)]);
  if (b.restoring === r) b.restoring = null;
}

function boundaryOfTab(tabId) {
  for (const b of boundaries.values()) {
    if (b.tabs.has(tabId)) return b;
  }
  return null;
}

// reasonOf says why the boundary refused a request of b.
function reasonOf(b, url, method) {
  let o = '';
  try {
    const u = new URL(url);
    const scheme = u.protocol === 'wss:' ? 'https:' : u.protocol === 'ws:' ? 'http:' : u.protocol;
    o = scheme + '//' + u.host;
  } catch (e) { o = ''; }
  if (b.origins.length && !b.origins.includes(o)) return REFUSED_ORIGIN;
  if (b.hold && !SAFE_METHODS.includes(String(method).toLowerCase())) return REFUSED_HELD;
  return REFUSED_ORIGIN;
}

function report(b, d, reason) {
  if (b.h.closed) return;
  post(b.h, {
    kind: 'event', event: 'boundary.refused',
    params: {
      tabId: b.tabId, url: String(d.url || '').slice(0, 4096), method: String(d.method || 'GET').toUpperCase().slice(0, 16),
      type: String(d.type || '').slice(0, 32), frameId: Number.isInteger(d.frameId) ? d.frameId : 0, reason,
    },
  });
}

chrome.webRequest.onErrorOccurred.addListener((d) => {
  if (d.error !== 'net::ERR_BLOCKED_BY_CLIENT') return;
  const b = boundaryOfTab(d.tabId);
  if (b) report(b, d, reasonOf(b, d.url, d.method));
}, { urls: ['<all_urls>'] });

// A window the page opened: under the tab's rules at once (so that its
// navigation to a foreign origin is blocked like the tab's own), reported,
// and closed when its first navigation commits or fails. (Closing it in
// this event, while the page's window.open is still being answered, can
// leave the page's script hanging.)
const closing = new Set();
chrome.webNavigation.onCreatedNavigationTarget.addListener((d) => {
  const b = boundaryOfTab(d.sourceTabId);
  if (!b) return;
  if (b.tabs.size < MAX_POPUPS) {
    closing.add(d.tabId);
    b.tabs.add(d.tabId);
    install(b).catch(() => {});
  } else {
    // Past the cap the popup is not under the rules: close it now rather
    // than let its first request go out unfiltered.
    chrome.tabs.remove(d.tabId).catch(() => {});
  }
  report(b, { url: d.url, method: 'GET', type: 'main_frame', frameId: 0 }, REFUSED_POPUP);
});

function closePopup(d) {
  if (d.frameId !== 0 || !closing.has(d.tabId)) return;
  closing.delete(d.tabId);
  chrome.tabs.remove(d.tabId).catch(() => {});
}
chrome.webNavigation.onCommitted.addListener(closePopup);
chrome.webNavigation.onErrorOccurred.addListener(closePopup);

chrome.tabs.onRemoved.addListener((tabId) => {
  closing.delete(tabId);
  const b = boundaryOfTab(tabId);
  if (!b) return;
  if (tabId === b.tabId) {
    clearBoundary(b.h, tabId);
    return;
  }
  b.tabs.delete(tabId);
  install(b).catch(() => {});
});

// webRTC keeps WebRTC from sending UDP outside a proxy while any boundary
// is held, and gives the setting back after the last one.
async function webRTC() {
  const p = chrome.privacy && chrome.privacy.network && chrome.privacy.network.webRTCIPHandlingPolicy;
  if (!p) return;
  try {
    if (boundaries.size) await p.set({ value: 'disable_non_proxied_udp' });
    else await p.clear({});
  } catch (e) { /* controlled by a policy or another extension: documented */ }
}

// The WebRTC guard. webrtc.js (the page's main world, every frame,
// about:blank, data: and blob: frames of a matched page included) replaces
// the page's peer connection constructors by stand-ins that throw, and
// signals each attempt with an event the observer counts; the observer is
// registered too (isolated world, top frame), so that its listener is in
// place at document_start, before any page script could add one to stop
// the event, and before a page that tries WebRTC as it loads does so. Both
// are registered, like listeners.js, for the origins of every boundary
// with WebRTC off (every http(s) page for a boundary without origins), for
// as long as one is held: the guard runs in every tab of those origins
// meanwhile, as the WebRTC setting above applies to every tab.
const GUARD_ID = 'aegis-webrtc-guard';
const PEER_OBSERVER_ID = 'aegis-peer-observer';
let guardsQueue = Promise.resolve();

// peerGuards brings the registrations in line with the boundaries held;
// calls are serialized.
function peerGuards() {
  const run = guardsQueue.then(syncPeerGuards);
  guardsQueue = run.catch(() => {});
  return run;
}

async function syncPeerGuards() {
  const patterns = new Set();
  for (const b of boundaries.values()) {
    if (b.allowWebRTC) continue;
    if (!b.origins.length) patterns.add('*://*/*'); // every http(s) page
    for (const o of b.origins) patterns.add(matchPattern(o));
  }
  const ids = [GUARD_ID, PEER_OBSERVER_ID];
  const have = (await chrome.scripting.getRegisteredContentScripts({ ids })).map((x) => x.id);
  if (!patterns.size) {
    if (have.length) await chrome.scripting.unregisterContentScripts({ ids: have });
    return;
  }
  const matches = Array.from(patterns);
  const guard = { id: GUARD_ID, matches, js: ['webrtc.js'], world: 'MAIN', runAt: 'document_start', allFrames: true, matchOriginAsFallback: true, persistAcrossSessions: false };
  const observer = { id: PEER_OBSERVER_ID, matches, js: ['observer.js'], world: 'ISOLATED', runAt: 'document_start', allFrames: false, persistAcrossSessions: false };
  if (have.length === ids.length) {
    await chrome.scripting.updateContentScripts([guard, observer]);
    return;
  }
  if (have.length) await chrome.scripting.unregisterContentScripts({ ids: have });
  try {
    await chrome.scripting.registerContentScripts([guard, observer]);
  } catch (e) {
    // Chrome before 119 knows no matchOriginAsFallback: about:blank frames
    // then keep the constructors they are created with.
    delete guard.matchOriginAsFallback;
    await chrome.scripting.registerContentScripts([guard, observer]);
  }
}

// guardShown runs the guard (and the observer that counts its refusals)
// in the page the tab shows when its boundary is set, which was loaded
// before the registration: a page script that took a constructor before
// keeps it (chrome.privacy above still keeps it off UDP outside a proxy),
// every later attempt is refused. Best effort: a page that cannot be
// scripted is left as it is.
async function guardShown(tabId) {
  try {
    await chrome.scripting.executeScript({ target: { tabId, frameIds: [0] }, files: ['observer.js'], injectImmediately: true });
    await chrome.scripting.executeScript({ target: { tabId, allFrames: true }, files: ['webrtc.js'], world: 'MAIN', injectImmediately: true });
  } catch (e) { /* not scriptable */ }
}

// A worker that starts holds no boundary: drop the session rules (only
// aegis makes them), the WebRTC setting and the WebRTC guard a killed
// worker may have left behind, before any rule of this worker is added.
rulesQueue = (async () => {
  const stale = await chrome.declarativeNetRequest.getSessionRules();
  if (stale.length) await chrome.declarativeNetRequest.updateSessionRules({ removeRuleIds: stale.map((r) => r.id) });
})().catch(() => {});
webRTC();
peerGuards().catch(() => {});
