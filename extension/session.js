// session.js: the session as the popup sees it, part of the service
// worker (background.js loads it with importScripts): the popup's commands
// (start, abort, approve, deny), the state the popup shows (kept in
// chrome.storage.session), the host's events that change it, and the ports
// of the popup and the options page, accepted from this extension's own
// pages only.
'use strict';

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
