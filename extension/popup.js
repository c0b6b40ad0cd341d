// popup.js: the aegis popup. It shows and edits nothing but the session
// form; the session itself lives in the host, its state in the service
// worker (so closing the popup loses nothing: the worker sends the state,
// the form as it was left included, whenever the popup opens). Everything
// shown that came from a page or a model is set as text, never as markup;
// pictures are the evidence's masked screenshots, as data: URLs the host
// made.
'use strict';

const $ = (id) => document.getElementById(id);
const port = chrome.runtime.connect({ name: 'popup' });
let state = null;
let target = null; // {tabId, url}
let formFilled = false;
let ticker = 0;

// An approval's buttons: both are disabled the moment one is clicked, until
// a different approval is shown, and a newly shown approval's buttons wait
// ARM_DELAY_MS before they take a click (as a browser's permission prompt
// does), so that a second click meant for the last prompt never answers
// the next one unseen.
const ARM_DELAY_MS = 750;
let shownApproval = ''; // the actionId and actionHash of the approval shown
let answered = ''; // the approval a click answered
let armTimer = 0;

function setAnswerable(on) {
  $('approve').disabled = !on;
  $('deny').disabled = !on;
}

function text(el, s) { el.textContent = s == null ? '' : String(s); }

function el(tag, cls, s) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (s != null) text(e, s);
  return e;
}

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

const RISKS = ['low', 'medium', 'high'];
const riskClass = (r) => (RISKS.includes(r) ? 'risk-' + r : '');
const DECISIONS = ['allowed', 'approved', 'denied', 'paused'];
const decisionClass = (d) => (DECISIONS.includes(d) ? 'result-' + d : '');

// fillForm shows the form as the person left it (the worker keeps it),
// once, when the popup opens.
function fillForm() {
  if (formFilled || !state) return;
  formFilled = true;
  const d = state.draft || {};
  if (d.goal) $('goal').value = d.goal;
  if (d.steps) $('steps').value = d.steps;
  if (d.preset && Array.from($('preset').options).some((o) => o.value === d.preset)) $('preset').value = d.preset;
}

function renderApproval() {
  const a = state.approval;
  $('approval').hidden = !a;
  clearInterval(ticker);
  ticker = 0;
  if (!a) {
    shownApproval = '';
    clearTimeout(armTimer);
    setAnswerable(false);
    return;
  }
  text($('ap-action'), a.action);
  text($('ap-target'), describeTarget(a.target));
  const vals = $('ap-values');
  vals.replaceChildren();
  for (const v of a.values || []) {
    const li = el('li');
    li.append(el('span', '', v.name + ': '), el('code', '', v.value));
    vals.append(li);
  }
  if (!vals.children.length) vals.append(el('li', 'ae-muted', 'no values: nothing is typed or sent'));
  text($('ap-page'), a.page);
  text($('ap-risk'), a.risk);
  $('ap-risk').className = riskClass(a.risk);
  const ul = $('ap-reasons');
  ul.replaceChildren();
  for (const r of a.reasons || []) ul.append(el('li', '', r.rule + ': ' + r.message));
  const key = a.actionId + ' ' + a.actionHash;
  if (key !== shownApproval) {
    shownApproval = key;
    $('approve').dataset.actionId = a.actionId;
    $('approve').dataset.actionHash = a.actionHash;
    setAnswerable(false);
    clearTimeout(armTimer);
    armTimer = setTimeout(() => { if (shownApproval === key && answered !== key) setAnswerable(true); }, ARM_DELAY_MS);
  }
  const tick = () => {
    if (!a.deadline) { text($('ap-countdown'), ''); return; }
    const left = Math.max(0, Math.ceil((a.deadline - Date.now()) / 1000));
    const mm = Math.floor(left / 60), ss = String(left % 60).padStart(2, '0');
    text($('ap-countdown'), left > 0 ? 'Answer within ' + mm + ':' + ss + ', or it is denied.' : 'Time is up: it is being denied.');
  };
  tick();
  if (a.deadline) ticker = setInterval(tick, 1000);
}

// renderArtifact shows one extracted artifact: a table as a table, text as
// text. Screenshots are shown as the last screenshot.
function renderArtifact(a) {
  const box = el('div', 'artifact');
  const from = a.sourceUrl ? ' from ' + a.sourceUrl : '';
  if (a.type === 'table') {
    let rows = null;
    try { rows = JSON.parse(a.value); } catch (e) { rows = null; }
    if (Array.isArray(rows) && rows.every((r) => Array.isArray(r))) {
      box.append(el('h3', '', 'Table' + from + ' (' + Math.max(0, rows.length - 1) + ' rows' + (a.truncated ? ', cut' : '') + ')'));
      const wrap = el('div', 'table-wrap');
      wrap.tabIndex = 0;
      wrap.setAttribute('role', 'region');
      wrap.setAttribute('aria-label', 'Extracted table' + from);
      const table = el('table');
      rows.forEach((r, i) => {
        const tr = el('tr');
        for (const c of r) {
          const cell = el(i === 0 ? 'th' : 'td', '', c);
          if (i === 0) cell.scope = 'col';
          tr.append(cell);
        }
        (i === 0 ? table.createTHead() : (table.tBodies[0] || table.createTBody())).append(tr);
      });
      wrap.append(table);
      box.append(wrap);
      return box;
    }
  }
  const what = a.type === 'link' ? 'Link' : a.type === 'table' ? 'Table' : 'Text';
  box.append(el('h3', '', what + from + (a.truncated ? ' (cut)' : '')));
  const pre = el('pre', 'text', a.value);
  pre.tabIndex = 0;
  box.append(pre);
  return box;
}

function renderResult() {
  const ended = state.ended;
  $('result').hidden = !ended && !state.evidence;
  const status = ended ? ended.status : 'running';
  const out = $('outcome');
  out.dataset.status = status;
  out.className = 'outcome ' + (status === 'completed' ? 'completed' : ended ? 'bad' : '');
  text(out, 'Outcome: ' + status);
  text($('summary'), ended ? ended.summary || ended.error : 'The session is running.');
  text($('evidence'), state.evidence);
  const r = ended && ended.result;
  text($('done'), r ? [
    r.actionsExecuted + ' action' + (r.actionsExecuted === 1 ? '' : 's') + ' executed',
    r.approved + ' approved',
    r.denied + ' denied',
    (r.durationMs / 1000).toFixed(1) + ' s',
  ].join(' · ') : '');
  const box = $('extracted');
  box.replaceChildren();
  for (const a of (r && r.artifacts) || []) {
    if (a.type !== 'screenshot') box.append(renderArtifact(a));
  }
  const more = r && r.omittedArtifacts;
  if (more > 0) box.append(el('p', 'ae-muted', more + ' more extracted result' + (more === 1 ? ' does' : 's do') + ' not fit here: the evidence holds ' + (more === 1 ? 'it' : 'them') + '.'));
  const last = ended && state.thumbs.length ? state.thumbs[state.thumbs.length - 1] : null;
  $('last-shot').hidden = !last;
  if (last) {
    $('last-shot-img').src = last.src;
    $('last-shot-img').alt = 'The last screenshot of the session, masked as the evidence holds it';
    text($('last-shot-caption'), 'Last screenshot (' + last.uri + ')');
  }
}

function stepLine(s) {
  const line = el('span', 'line');
  line.append(el('span', '', s.action + ' → '));
  line.append(el('span', decisionClass(s.decision), s.decision || 'not judged'));
  if (s.risk) {
    line.append(' (');
    line.append(el('span', riskClass(s.risk), s.risk));
    line.append(')');
  }
  if (s.executed) line.append(s.ok ? ' ✓' : el('span', 'failed', ' ✗'));
  if (s.error) line.append(' ' + s.error);
  if (s.reasons && s.reasons.length) line.append(' [' + s.reasons.join('; ') + ']');
  return line;
}

// renderSteps lists the steps under their number, the decision's
// stepIndex (several decisions of one step under one number), with the
// Navigator's reason once a batch and a thumbnail where the step took a
// screenshot.
function renderSteps() {
  const ol = $('step-list');
  ol.replaceChildren();
  const shots = new Map();
  for (const th of state.thumbs) if (th.actionId) shots.set(th.actionId, th);
  let group = null, list = null, index = -1, batch = -1;
  for (const s of state.steps) {
    if (s.index !== index || !group) {
      index = s.index;
      group = el('li', 'group');
      group.append(el('h3', '', 'Step ' + s.index));
      list = el('ul');
      group.append(list);
      ol.append(group);
    }
    if (s.batch !== batch && s.reason && !s.effect) {
      list.append(el('li', 'reason', 'Navigator: ' + s.reason));
    }
    if (!s.effect) batch = s.batch;
    const li = el('li', 'step');
    li.dataset.decision = s.decision || '';
    li.append(stepLine(s));
    const th = !s.effect && shots.get(s.actionId);
    if (th) {
      const img = el('img');
      img.src = th.src;
      img.alt = 'Screenshot taken by step ' + s.index;
      li.append(img);
    }
    list.append(li);
  }
}

function render() {
  if (!state) return;
  fillForm();
  const running = state.phase === 'running' || state.phase === 'starting';
  text($('phase'), state.phase);
  $('start').disabled = running || !target;
  $('abort').disabled = !running;
  for (const id of ['goal', 'steps', 'origins', 'preset']) $(id).disabled = running;
  renderApproval();
  $('error').hidden = !state.error;
  text($('error'), state.error);
  renderResult();
  renderSteps();
  const notes = $('notices');
  notes.replaceChildren();
  for (const n of state.notices || []) notes.append(el('li', '', n));
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

// saveDraft hands the form to the worker as it is typed: the popup may be
// closed at any moment.
function saveDraft() {
  port.postMessage({ cmd: 'draft', goal: $('goal').value, steps: $('steps').value, preset: $('preset').value });
}
for (const id of ['goal', 'steps', 'preset']) $(id).addEventListener('input', saveDraft);

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
// answer sends the person's answer to the approval shown, once: both
// buttons stay disabled until another approval is shown.
function answer(cmd) {
  if ($(cmd).disabled || !shownApproval || answered === shownApproval) return;
  answered = shownApproval;
  setAnswerable(false);
  port.postMessage({ cmd, actionId: $('approve').dataset.actionId, actionHash: $('approve').dataset.actionHash });
}
$('approve').addEventListener('click', () => answer('approve'));
$('deny').addEventListener('click', () => answer('deny'));
$('open-options').addEventListener('click', () => chrome.runtime.openOptionsPage());

findTarget().then((t) => { target = t; render(); });
