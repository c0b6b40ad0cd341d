// background.js: the aegis extension's service worker.
//
// It holds one native messaging port to the aegis host per session (an
// open port also keeps this worker alive), carries the popup's commands
// (start, abort, approve, deny) to the host and the session's events back
// to the popup, and carries out the host's requests on the session's tab:
// the shared observer and the action executor run there as content
// scripts (observer.js, executor.js) in the extension's isolated world.
// The protocol is nativehost/PROTOCOL.md in the aegis repository.
//
// What this worker enforces itself, whatever the host asks:
//   - the host may act only on the session's tab and on tabs it opened;
//   - a call or a screenshot on a page outside the session's allowed
//     origins is refused (checked in the page, in the same task as the
//     action, so a page that navigated away is never acted on);
//   - only http and https URLs are navigated, and only to allowed origins;
//   - while the host holds a boundary on a tab (boundary.set), every
//     request of that tab (navigations, frames, fetches, beacons,
//     WebSockets...) to an origin outside the session's is blocked by the
//     browser (declarativeNetRequest session rules), and so is every
//     state-changing request but the one form submission the host judged
//     for the click it is running; each refusal is reported to the host
//     (boundary.refused), windows the page opens are closed and reported,
//     WebRTC sends nothing outside a proxy, and unless the host allows it
//     the page's WebRTC constructors throw (webrtc.js);
//   - only this extension's popup may send commands.
// Nothing from a page ever reaches this worker: content scripts answer
// executeScript calls and send no messages.
'use strict';

const HOST_NAME = 'run.aegis.host';
const PROTOCOL = 1;
const CONTENT_FILES = ['observer.js', 'executor.js'];
const LISTENERS_ID = 'aegis-listeners';

// Protocol error codes (nativehost/PROTOCOL.md; append-only).
const CODE = Object.freeze({
  BadMessage: 1, FrameTooLarge: 2, UnsupportedVersion: 3, HandshakeRequired: 4, UnknownMethod: 5,
  BadParams: 6, SessionRunning: 7, NoSession: 8, UnexpectedResponse: 9, ApprovalMismatch: 10,
  NoPendingApproval: 11, OriginRefused: 12, Config: 13, Internal: 14, Timeout: 15, TabClosed: 16,
  NavigationFailed: 17, OriginNotAllowed: 18, ScriptFailed: 19, Unsupported: 20, ShuttingDown: 21,
  TargetChanged: 22, ConfigRejected: 23,
});

class ProtoError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------
// Navigation tracking: commits, loads and errors of each tab's main frame.

const navs = new Map();

function navOf(tabId) {
  let n = navs.get(tabId);
  if (!n) {
    n = { commits: 0, loads: 0, errors: 0, aborts: 0, abortedURL: '', error: '', loading: false, removed: false, waiters: new Set() };
    navs.set(tabId, n);
  }
  return n;
}

function wake(n) {
  for (const w of Array.from(n.waiters)) w();
}

chrome.webNavigation.onCommitted.addListener((d) => {
  if (d.frameId !== 0) return;
  boundaryCommitted(d);
  const n = navOf(d.tabId);
  n.commits++;
  n.loading = true;
  wake(n);
});
chrome.webNavigation.onCompleted.addListener((d) => {
  if (d.frameId !== 0) return;
  const n = navOf(d.tabId);
  n.loads++;
  n.loading = false;
  wake(n);
});
chrome.webNavigation.onErrorOccurred.addListener((d) => {
  if (d.frameId !== 0) return;
  boundaryNavError(d);
  const n = navOf(d.tabId);
  n.loading = false;
  if (d.error === 'net::ERR_ABORTED') {
    n.aborts++;
    n.abortedURL = String(d.url || '');
  } else {
    n.errors++;
    n.error = String(d.error || 'navigation failed');
  }
  wake(n);
});
chrome.tabs.onRemoved.addListener((tabId) => {
  const n = navOf(tabId);
  n.removed = true;
  wake(n);
  setTimeout(() => navs.delete(tabId), 60000);
  if (session && session.tabId === tabId && (state.phase === 'running' || state.phase === 'starting')) {
    setState({ error: 'The session\'s tab was closed.' });
  }
});

// waitNav resolves true when pred(nav state of tabId) holds, false after ms.
function waitNav(tabId, pred, ms) {
  const n = navOf(tabId);
  if (pred(n)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (v) => {
      n.waiters.delete(check);
      clearTimeout(timer);
      resolve(v);
    };
    const check = () => { if (pred(n)) done(true); };
    const timer = setTimeout(() => done(false), Math.max(0, ms));
    n.waiters.add(check);
  });
}

// ---------------------------------------------------------------------------
// The native port.

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

// ---------------------------------------------------------------------------
// The host's requests: the extension driver's calls on a tab.

function checkTab(h, tabId) {
  if (!Number.isInteger(tabId) || !h.tabs.has(tabId)) {
    throw new ProtoError(CODE.BadParams, 'tab ' + tabId + ' is not a tab of this session');
  }
}

function checkOrigins(origins) {
  if (!Array.isArray(origins)) return [];
  return origins.filter((o) => typeof o === 'string' && /^https?:\/\/[^/]+$/.test(o)).slice(0, 64);
}

function originOf(u) {
  try {
    const x = new URL(u);
    return x.protocol === 'http:' || x.protocol === 'https:' ? x.origin : '';
  } catch (e) {
    return '';
  }
}

async function tabInfo(tabId) {
  let t;
  try {
    t = await chrome.tabs.get(tabId);
  } catch (e) {
    throw new ProtoError(CODE.TabClosed, 'tab ' + tabId + ' is gone');
  }
  return { tabId: t.id, windowId: t.windowId, url: t.url || '', title: t.title || '', active: !!t.active, status: t.status || '' };
}

// Match patterns cover every port of a host, which is why the origin check
// in the page (callInPage) is exact.
function matchPattern(origin) {
  const u = new URL(origin);
  return u.protocol + '//' + u.hostname + '/*';
}

// registerListeners makes listeners.js run in the main world of the
// session's allowed origins (and of no other page), from the next document
// on.
async function registerListeners(h, origins) {
  let grew = false;
  for (const o of origins) {
    if (!h.origins.has(o)) { h.origins.add(o); grew = true; }
  }
  if (!grew) return;
  const matches = Array.from(new Set(Array.from(h.origins).map(matchPattern)));
  const script = { id: LISTENERS_ID, matches, js: ['listeners.js'], world: 'MAIN', runAt: 'document_start', allFrames: true, persistAcrossSessions: false };
  try {
    const have = await chrome.scripting.getRegisteredContentScripts({ ids: [LISTENERS_ID] });
    if (have.length) await chrome.scripting.updateContentScripts([script]);
    else await chrome.scripting.registerContentScripts([script]);
  } catch (e) { /* listener detection only: not fatal */ }
}

async function unregisterListeners() {
  try { await chrome.scripting.unregisterContentScripts({ ids: [LISTENERS_ID] }); } catch (e) { /* none */ }
}

// A worker that starts has no session: drop a registration a killed
// worker may have left behind.
unregisterListeners();

function scriptError(e, tabId) {
  const msg = String((e && e.message) || e);
  if (/No tab with id|tab was closed|Tab .* not found/i.test(msg)) return new ProtoError(CODE.TabClosed, 'tab ' + tabId + ' is gone');
  return new ProtoError(CODE.ScriptFailed, 'the content script could not run: ' + msg.slice(0, 300));
}

// callInPage runs in the tab (isolated world): the origin check and the
// call happen in one task, so the page the call acts on is the page checked.
function callInPage(fn, args, origins) {
  const here = location.origin;
  if (origins.length && !origins.includes(here)) return { guard: here };
  const x = globalThis.__aegisExec;
  if (!x) return { missing: true };
  return { value: x.call(fn, args) };
}

async function inTab(tabId, fn, args, origins) {
  for (let attempt = 0; attempt < 2; attempt++) {
    let res;
    try {
      [res] = await chrome.scripting.executeScript({ target: { tabId, frameIds: [0] }, func: callInPage, args: [fn, args, origins] });
    } catch (e) {
      throw scriptError(e, tabId);
    }
    const v = res && res.result;
    if (v && typeof v.guard === 'string') {
      throw new ProtoError(CODE.OriginNotAllowed, 'the tab shows ' + v.guard.slice(0, 200) + ', which is not one of the session\'s allowed origins: refused');
    }
    if (v && typeof v.value === 'string') return v.value;
    if (v && v.missing) {
      try {
        await chrome.scripting.executeScript({ target: { tabId, frameIds: [0] }, files: CONTENT_FILES });
      } catch (e) {
        throw scriptError(e, tabId);
      }
      continue;
    }
    throw new ProtoError(CODE.ScriptFailed, 'the content script gave no answer');
  }
  throw new ProtoError(CODE.ScriptFailed, 'the content script cannot be installed in this page');
}

// sameURL reports whether a and b are the same URL once parsed (the
// browser reports the URL it navigated, normalized).
function sameURL(a, b) {
  try {
    return new URL(a).href === new URL(b).href;
  } catch (e) {
    return a === b;
  }
}

function boundMs(v, def, max) {
  return Number.isFinite(v) && v > 0 ? Math.min(v, max) : def;
}

async function tabNavigate(h, p) {
  checkTab(h, p.tabId);
  const origins = checkOrigins(p.origins);
  const o = originOf(p.url);
  if (!o) throw new ProtoError(CODE.NavigationFailed, 'only http and https URLs are navigated');
  if (origins.length && !origins.includes(o)) throw new ProtoError(CODE.OriginNotAllowed, 'origin ' + o + ' is not one of the session\'s allowed origins');
  await registerListeners(h, origins.length ? origins : [o]);
  boundaryCall(p.tabId);
  const timeout = boundMs(p.timeoutMs, 30000, 120000);
  const deadline = Date.now() + timeout;
  const n = navOf(p.tabId);
  const commits = n.commits, errors = n.errors, aborts = n.aborts;
  try {
    await chrome.tabs.update(p.tabId, { url: p.url });
  } catch (e) {
    throw new ProtoError(CODE.TabClosed, 'tab ' + p.tabId + ' is gone');
  }
  await waitNav(p.tabId, (x) => x.commits > commits || x.errors > errors || x.aborts > aborts || x.removed, deadline - Date.now());
  if (n.aborts > aborts && n.commits === commits && n.errors === errors && !n.removed) {
    // An abort: of an earlier navigation, which this one replaced (this
    // one's commit is still to come, however busy the browser is: wait for
    // it, or for this one's own abort, until the deadline), or of this one
    // (replaced by another navigation, whose commit follows soon, or over
    // without a page: a download, a 204).
    const mine = (x) => x.aborts > aborts && sameURL(x.abortedURL, p.url);
    if (!mine(n)) {
      await waitNav(p.tabId, (x) => x.commits > commits || x.errors > errors || x.removed || mine(x), deadline - Date.now());
    }
    if (mine(n) && n.commits === commits && n.errors === errors && !n.removed) {
      await waitNav(p.tabId, (x) => x.commits > commits || x.errors > errors || x.removed, Math.min(2000, deadline - Date.now()));
    }
    if (n.commits === commits && n.errors === errors && !n.removed && Date.now() < deadline) {
      throw new ProtoError(CODE.NavigationFailed, 'the navigation was aborted');
    }
  }
  if (n.removed) throw new ProtoError(CODE.TabClosed, 'the tab was closed');
  if (n.errors > errors && n.commits === commits) throw new ProtoError(CODE.NavigationFailed, 'the browser did not load the page: ' + n.error);
  if (n.commits === commits) throw new ProtoError(CODE.Timeout, 'the navigation did not start within ' + timeout + ' ms');
  const loaded = await waitNav(p.tabId, (x) => !x.loading || x.removed, deadline - Date.now());
  if (n.removed) throw new ProtoError(CODE.TabClosed, 'the tab was closed');
  if (!loaded) throw new ProtoError(CODE.Timeout, 'the page did not load within ' + timeout + ' ms');
  return tabInfo(p.tabId);
}

// tabCall runs one function of the content scripts in the tab; with
// allow, the judged form submission is allowed through the tab's boundary
// for the length of the call (the navigation it starts included).
async function tabCall(h, p) {
  checkTab(h, p.tabId);
  if (typeof p.fn !== 'string' || p.fn.length > 64) throw new ProtoError(CODE.BadParams, 'fn must be a function name');
  const origins = checkOrigins(p.origins);
  if (origins.length) await registerListeners(h, origins);
  const n = navOf(p.tabId);
  const commits = n.commits, errors = n.errors;
  let navigated = false;
  boundaryCall(p.tabId);
  const value = await withAllowance(h, p.tabId, p.allow, async () => {
    const v = await inTab(p.tabId, p.fn, Array.isArray(p.args) ? p.args : [], origins);
    let r = null;
    try { r = JSON.parse(v); } catch (e) { r = null; }
    // The element the host judged is no longer the element here: nothing
    // was done (the executor checked before acting).
    if (r && !r.ok && r.code === 'target_changed') throw new ProtoError(CODE.TargetChanged, String(r.msg || 'the target changed').slice(0, 1000));
    const nav = p.navigation;
    if (nav && typeof nav === 'object' && r && r.ok) {
      if (r.navigating && !r.download) {
        // A navigation the boundary refused ends in an error, not a commit.
        await waitNav(p.tabId, (x) => x.commits > commits || x.errors > errors || x.removed, boundMs(nav.commitMs, 5000, 60000));
      }
      if (n.commits > commits) {
        navigated = true;
        await waitNav(p.tabId, (x) => !x.loading || x.removed, boundMs(nav.loadMs, 30000, 120000));
      }
      // A navigation the boundary refused: the tab is being sent back.
      await restored(p.tabId, boundMs(nav.loadMs, 30000, 120000));
    }
    return v;
  });
  let url = '';
  try { url = (await chrome.tabs.get(p.tabId)).url || ''; } catch (e) { url = ''; }
  return { value, url, navigated };
}

async function tabCapture(h, p) {
  checkTab(h, p.tabId);
  const origins = checkOrigins(p.origins);
  const format = p.format === 'jpeg' ? 'jpeg' : 'png';
  const quality = Number.isInteger(p.quality) && p.quality > 0 && p.quality <= 100 ? p.quality : 70;
  let t = await tabInfo(p.tabId);
  const o = originOf(t.url);
  if (origins.length && !origins.includes(o)) throw new ProtoError(CODE.OriginNotAllowed, 'the tab shows ' + (o || 'a non-web page') + ', which is not one of the session\'s allowed origins: refused');
  if (!t.active) {
    await chrome.tabs.update(p.tabId, { active: true });
    await sleep(150);
  }
  let dataUrl = '';
  for (let attempt = 0; ; attempt++) {
    try {
      dataUrl = await chrome.tabs.captureVisibleTab(t.windowId, format === 'jpeg' ? { format, quality } : { format });
      break;
    } catch (e) {
      const msg = String((e && e.message) || e);
      // Chrome allows two captures a second: wait for the next slot.
      if (attempt < 12 && /MAX_CAPTURE_VISIBLE_TAB_CALLS_PER_SECOND/.test(msg)) { await sleep(150); continue; }
      throw new ProtoError(CODE.Internal, 'the tab could not be captured: ' + msg.slice(0, 300));
    }
  }
  // The tab may have navigated while it was captured: check again.
  t = await tabInfo(p.tabId);
  if (origins.length && !origins.includes(originOf(t.url))) throw new ProtoError(CODE.OriginNotAllowed, 'the tab left the session\'s allowed origins during the capture: refused');
  // The whole viewport, always: the driver paints the masks and crops an
  // element's box in Go (driver/mask.go), at the scale the image and the
  // observer's viewport give. The data URL's base64 is passed on as it is.
  const mime = format === 'jpeg' ? 'image/jpeg' : 'image/png';
  const prefix = 'data:' + mime + ';base64,';
  if (typeof dataUrl !== 'string' || !dataUrl.startsWith(prefix)) throw new ProtoError(CODE.Internal, 'the capture is not a base64 ' + mime + ' data URL');
  return { data: dataUrl.slice(prefix.length), mime, url: t.url };
}

async function handleHostRequest(h, method, p) {
  if (!p || typeof p !== 'object') throw new ProtoError(CODE.BadParams, 'params must be an object');
  switch (method) {
    case 'ping':
      return { data: typeof p.data === 'string' ? p.data : '' };
    case 'tab.open': {
      if (p.url !== 'about:blank') throw new ProtoError(CODE.BadParams, 'a tab is opened blank, then navigated');
      const t = await chrome.tabs.create({ url: 'about:blank', active: true });
      // The blank page's own navigation commits after create returns, and
      // would abort a navigation started before it: wait for it.
      await waitNav(t.id, (x) => x.loads > 0 || x.errors > 0 || x.removed, 3000);
      h.tabs.add(t.id);
      h.opened = h.opened || new Set();
      h.opened.add(t.id);
      return tabInfo(t.id);
    }
    case 'tab.close':
      if (!h.opened || !h.opened.has(p.tabId)) throw new ProtoError(CODE.BadParams, 'only a tab the host opened may be closed');
      h.tabs.delete(p.tabId);
      h.opened.delete(p.tabId);
      await clearBoundary(h, p.tabId);
      try { await chrome.tabs.remove(p.tabId); } catch (e) { /* already gone */ }
      return {};
    case 'tab.info':
      checkTab(h, p.tabId);
      return tabInfo(p.tabId);
    case 'tab.navigate':
      return tabNavigate(h, p);
    case 'tab.call':
      return tabCall(h, p);
    case 'tab.capture':
      return tabCapture(h, p);
    case 'boundary.set':
      return setBoundary(h, p);
    case 'boundary.clear':
      checkTab(h, p.tabId);
      return clearBoundary(h, p.tabId);
  }
  throw new ProtoError(CODE.UnknownMethod, 'unknown method ' + String(method).slice(0, 64));
}

// ---------------------------------------------------------------------------
// The session, as the popup sees it.

// session is the running session's connection and tab, or null.
let session = null;

// state is what the popup shows; it survives the popup closing.
let state = freshState();

// draft is the popup's form (goal, steps, preset) as the person left it:
// the popup shows it again when it reopens.
function freshState(draft) {
  return { phase: 'idle', tabId: 0, goal: '', sessionId: '', evidence: '', steps: [], thumbs: [], approval: null, ended: null, error: '', notices: [], draft: draft || { goal: '', steps: '', preset: '' } };
}

// The popup's state outlives this worker (which Chrome stops when idle
// after a session) in chrome.storage.session: memory only, gone when the
// browser quits, not readable by content scripts. Model settings and
// secrets are never stored by the extension (they live in the host).
const STATE_KEY = 'popupState';

function persist() {
  chrome.storage.session.set({ [STATE_KEY]: state }).catch(() => {});
}

const stateLoaded = chrome.storage.session.get(STATE_KEY).then((v) => {
  const saved = v && v[STATE_KEY];
  if (!saved || typeof saved !== 'object' || session || state.phase !== 'idle' || state.draft.goal) return;
  state = Object.assign(freshState(), saved, { approval: null });
  if (state.phase === 'running' || state.phase === 'starting') {
    state.phase = 'error';
    state.error = 'The extension restarted during the session: it is over, and its evidence bundle says how it ended.';
  }
  broadcast();
}, () => {});


const popups = new Set();

function setState(patch) {
  Object.assign(state, patch);
  if (patch.error && state.phase !== 'ended') state.phase = 'error';
  broadcast();
  if (state.phase !== 'running' && state.phase !== 'starting') persist();
}

// MAX_THUMBS bounds the screenshots kept for the popup (the oldest go).
const MAX_THUMBS = 40;

// thumbOf checks a session.thumbnail event: a small JPEG as base64.
function thumbOf(d) {
  if (!d || d.mime !== 'image/jpeg' || typeof d.data !== 'string' || d.data.length > 400000 || !/^[A-Za-z0-9+/]+=*$/.test(d.data)) return null;
  if (typeof d.uri !== 'string' || d.uri.length > 200) return null;
  return { uri: d.uri, actionId: typeof d.actionId === 'string' ? d.actionId.slice(0, 128) : '', src: 'data:image/jpeg;base64,' + d.data, width: d.width | 0, height: d.height | 0 };
}

function broadcast() {
  chrome.action.setBadgeText({ text: state.approval ? '!' : state.phase === 'running' ? '…' : '' }).catch(() => {});
  for (const p of popups) {
    try { p.postMessage({ state }); } catch (e) { popups.delete(p); }
  }
}

function notice(text) {
  state.notices.push(String(text).slice(0, 500));
  if (state.notices.length > 20) state.notices.shift();
}

function onHostEvent(h, name, data) {
  if (name === 'host.error' && data && typeof data.message === 'string') h.lastError = data.message.slice(0, 1000);
  if (!session || session.host !== h) return;
  switch (name) {
    case 'session.step':
      state.steps.push(data);
      if (state.steps.length > 500) state.steps.shift();
      break;
    case 'approval.request':
      state.approval = data;
      // When the host denies it for want of an answer (a clock of this
      // worker's: the popup counts down to it).
      state.approval.deadline = data.timeoutMs > 0 ? Date.now() + data.timeoutMs : 0;
      break;
    case 'session.thumbnail': {
      const th = thumbOf(data);
      if (!th) return;
      state.thumbs.push(th);
      if (state.thumbs.length > MAX_THUMBS) state.thumbs.shift();
      break;
    }
    case 'session.event':
      if (data && data.type === 'approval_resolved') state.approval = null;
      if (data && data.type === 'error' && data.message) notice(data.message);
      break;
    case 'session.ended':
      state.phase = 'ended';
      state.ended = data;
      state.approval = null;
      state.evidence = (data.evidence && data.evidence.dir) || state.evidence;
      // One native port per session: closing it lets the host exit.
      // (Our own disconnect fires no onDisconnect here: clean up now.)
      if (session && session.host === h) session = null;
      closeHost(h);
      persist();
      break;
    case 'host.error':
      // While starting, the error is the start's own (shown once, as the
      // popup's error).
      if (state.phase === 'starting') return;
      notice('aegis host: ' + (data.message || data.name || 'error'));
      break;
    default:
      return;
  }
  broadcast();
}

function onHostGone(h) {
  if (!session || session.host !== h) return;
  session = null;
  if (state.phase === 'running' || state.phase === 'starting') {
    setState({ error: 'The aegis host stopped: ' + (h.lastError || h.error) + '. The session is over; nothing more will run.', approval: null });
  } else {
    broadcast();
  }
}

async function start(cmd) {
  if (session) throw new Error('a session is already running');
  const tabId = cmd.tabId;
  if (!Number.isInteger(tabId) || tabId <= 0) throw new Error('no tab to run on');
  state = freshState(draftOf(cmd));
  state.phase = 'starting';
  state.tabId = tabId;
  state.goal = String(cmd.goal || '').slice(0, 4000);
  broadcast();
  const h = connectHost();
  h.tabs.add(tabId);
  session = { host: h, tabId };
  try {
    const hello = await hostCall(h, 'hello', { protocol: [PROTOCOL], extension: chrome.runtime.getManifest().version });
    if (hello.protocol !== PROTOCOL) throw new Error('the aegis host speaks protocol ' + hello.protocol);
    const res = await hostCall(h, 'session.start', {
      tabId,
      goal: state.goal,
      origins: Array.isArray(cmd.origins) ? cmd.origins.slice(0, 64) : [],
      startUrl: typeof cmd.startUrl === 'string' ? cmd.startUrl : '',
      preset: typeof cmd.preset === 'string' ? cmd.preset : '',
      steps: Array.isArray(cmd.steps) && cmd.steps.length ? cmd.steps.slice(0, 1000) : undefined,
    });
    setState({ phase: 'running', sessionId: res.session, evidence: res.evidence });
  } catch (e) {
    if (session && session.host === h) session = null;
    const why = h.lastError || (h.closed && h.error ? h.error : String(e.message || e));
    closeHost(h);
    setState({ error: 'Could not start: ' + why });
  }
}

async function popupCommand(cmd) {
  switch (cmd && cmd.cmd) {
    case 'start':
      return start(cmd);
    case 'abort':
      if (!session) throw new Error('no session is running');
      return hostCall(session.host, 'session.abort', { reason: 'aborted from the popup' });
    case 'approve':
    case 'deny': {
      if (!session) throw new Error('no session is running');
      const a = state.approval;
      if (!a) throw new Error('no approval is pending');
      await hostCall(session.host, 'approval.answer', { actionId: String(cmd.actionId || ''), actionHash: String(cmd.actionHash || ''), decision: cmd.cmd });
      if (state.approval === a) state.approval = null;
      broadcast();
      return null;
    }
    case 'reset':
      if (!session) { state = freshState(state.draft); broadcast(); persist(); }
      return null;
    case 'draft':
      state.draft = draftOf(cmd);
      persist();
      return null;
  }
  throw new Error('unknown command');
}

// draftOf is the form of a start or draft command, bounded.
function draftOf(cmd) {
  const str = (v, n) => (typeof v === 'string' ? v.slice(0, n) : '');
  const steps = Array.isArray(cmd.steps) ? cmd.steps.filter((x) => typeof x === 'string').join('\n') : cmd.steps;
  return { goal: str(cmd.goal, 4000), steps: str(steps, 20000), preset: str(cmd.preset, 32) };
}

chrome.runtime.onConnect.addListener((port) => {
  const s = port.sender || {};
  if (port.name === 'options' && s.id === chrome.runtime.id && typeof s.url === 'string' && s.url.startsWith(chrome.runtime.getURL('options.html'))) {
    optionsPort(port);
    return;
  }
  const popupURL = chrome.runtime.getURL('popup.html');
  if (port.name !== 'popup' || s.id !== chrome.runtime.id || typeof s.url !== 'string' || !s.url.startsWith(popupURL)) {
    port.disconnect();
    return;
  }
  popups.add(port);
  port.onDisconnect.addListener(() => popups.delete(port));
  port.onMessage.addListener((cmd) => {
    Promise.resolve()
      .then(() => popupCommand(cmd))
      .then(() => port.postMessage({ reply: cmd && cmd.cmd, ok: true }), (e) => port.postMessage({ reply: cmd && cmd.cmd, ok: false, error: String((e && e.message) || e) }));
  });
  // The saved state first, when this worker just started.
  stateLoaded.then(() => { try { port.postMessage({ state }); } catch (e) { /* closed */ } });
});

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

// The session boundary (declarativeNetRequest rules, refusals, popups,
// WebRTC): boundary.js, which uses what is defined above.
importScripts('boundary.js');

// The options page's model settings, read and written through the host:
// settings.js.
importScripts('settings.js');

// The worker's top-level code has run: everything above is defined. A
// harness that evaluates code in this worker (nativehost/nativehosttest)
// waits for this signal rather than for time to pass: it reads
// self.aegisReady, or listens for the 'aegisready' event when it got in
// before the script ran. The signal grants nothing.
self.aegisReady = true;
self.dispatchEvent(new Event('aegisready'));
