// navigation.js: navigation tracking, part of the service worker
// (background.js loads it with importScripts): the commits, loads and
// errors of each tab's main frame, and waitNav, which waits for one of
// them.
'use strict';

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
