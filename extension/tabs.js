// tabs.js: the host's requests, part of the service worker (background.js
// loads it with importScripts): the extension driver's calls on a tab
// (open, navigate, run the content scripts, capture), refused on tabs that
// are not the session's and on pages outside the session's allowed
// origins.
'use strict';

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
