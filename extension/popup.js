// popup.js: the aegis popup. It shows and edits nothing but the session
// form; the session itself lives in the host, its state in the service
// worker (so closing the popup loses nothing). Everything shown that came
// from a page or a model is set as text, never as markup.
'use strict';

const $ = (id) => document.getElementById(id);
const port = chrome.runtime.connect({ name: 'popup' });
let state = null;
let target = null; // {tabId, url}

function text(el, s) { el.textContent = s == null ? '' : String(s); }

function originOf(u) {
  try {
    const x = new URL(u);
    return x.protocol === 'http:' || x.protocol === 'https:' ? x.origin : '';
  } catch (e) {
    return '';
  }
}

// findTarget picks the tab to run on: ?tab=ID (the popup opened as a page),
// else the active tab of the last focused window.
async function findTarget() {
  const q = new URLSearchParams(location.search).get('tab');
  let tab = null;
  if (q) {
    try { tab = await chrome.tabs.get(Number(q)); } catch (e) { tab = null; }
  } else {
    const [t] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
    tab = t || null;
  }
  if (!tab || !originOf(tab.url || '')) {
    text($('target'), 'Open the popup on an http or https page to run aegis there.');
    return null;
  }
  text($('target'), 'Runs on: ' + tab.url);
  if (!$('origins').value) $('origins').value = originOf(tab.url);
  return { tabId: tab.id, url: tab.url };
}

function describeTarget(t) {
  if (!t) return '(none)';
  let s = '<' + (t.tag || '?');
  if (t.id) s += ' id="' + t.id + '"';
  if (t.type) s += ' type="' + t.type + '"';
  if (t.name) s += ' name="' + t.name + '"';
  s += '>';
  const name = t.text || t.label;
  if (name) s += ' "' + name + '"';
  return s;
}

function render() {
  if (!state) return;
  const running = state.phase === 'running' || state.phase === 'starting';
  text($('phase'), state.phase);
  $('start').disabled = running || !target;
  $('abort').disabled = !running;
  for (const id of ['goal', 'steps', 'origins', 'preset']) $(id).disabled = running;

  const a = state.approval;
  $('approval').hidden = !a;
  if (a) {
    text($('ap-action'), a.action);
    text($('ap-target'), describeTarget(a.target));
    text($('ap-page'), a.page);
    text($('ap-risk'), a.risk);
    $('ap-risk').className = a.risk === 'high' ? 'risk-high' : '';
    const ul = $('ap-reasons');
    ul.replaceChildren();
    for (const r of a.reasons || []) {
      const li = document.createElement('li');
      text(li, r.rule + ': ' + r.message);
      ul.append(li);
    }
    $('approve').dataset.actionId = a.actionId;
    $('approve').dataset.actionHash = a.actionHash;
  }

  $('error').hidden = !state.error;
  text($('error'), state.error);

  const ended = state.ended;
  $('result').hidden = !ended && !state.evidence;
  text($('summary'), ended ? ended.status + ': ' + ended.summary : 'running');
  text($('evidence'), state.evidence);

  const ol = $('step-list');
  ol.replaceChildren();
  for (const s of state.steps) {
    const li = document.createElement('li');
    li.className = 'step d-' + (s.decision || 'none') + (s.executed && !s.ok ? ' failed' : '');
    let line = s.action + ' → ' + (s.decision || 'not judged');
    if (s.risk) line += ' (' + s.risk + ')';
    if (s.executed) line += s.ok ? ' ✓' : ' ✗';
    if (s.error) line += ' ' + s.error;
    if (s.reasons && s.reasons.length) line += ' [' + s.reasons.join('; ') + ']';
    text(li, line);
    ol.append(li);
  }
  const notes = $('notices');
  notes.replaceChildren();
  for (const n of state.notices || []) {
    const li = document.createElement('li');
    text(li, n);
    notes.append(li);
  }
}

port.onMessage.addListener((m) => {
  if (m.state) {
    state = m.state;
    render();
  } else if (m.reply && !m.ok) {
    $('error').hidden = false;
    text($('error'), m.error);
  }
});

$('start-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  if (!target) return;
  const origins = $('origins').value.split(/[\s,]+/).filter(Boolean);
  const steps = $('steps').value.split('\n').map((s) => s.trim()).filter(Boolean);
  const startOrigin = originOf(target.url);
  port.postMessage({
    cmd: 'start',
    tabId: target.tabId,
    goal: $('goal').value.trim(),
    origins,
    startUrl: origins.includes(startOrigin) ? target.url : '',
    preset: $('preset').value,
    steps,
  });
});

$('abort').addEventListener('click', () => port.postMessage({ cmd: 'abort' }));
$('approve').addEventListener('click', () => port.postMessage({ cmd: 'approve', actionId: $('approve').dataset.actionId, actionHash: $('approve').dataset.actionHash }));
$('deny').addEventListener('click', () => port.postMessage({ cmd: 'deny', actionId: $('approve').dataset.actionId, actionHash: $('approve').dataset.actionHash }));

findTarget().then((t) => { target = t; render(); });
