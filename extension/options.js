// options.js: the model settings, read and written through the aegis host
// (the service worker's settings.js carries the commands): nothing is
// stored in the extension, and the API key only ever goes to the host,
// which says whether one is set, never what it is. What the host says is
// set as text, never as markup.
'use strict';

const $ = (id) => document.getElementById(id);
const port = chrome.runtime.connect({ name: 'options' });

function text(el, s) { el.textContent = s == null ? '' : String(s); }

function showError(msg) {
  $('error').hidden = !msg;
  text($('error'), msg);
}

function busy(on) {
  for (const id of ['save', 'remove']) $(id).disabled = on;
}

// show fills the form with the host's view of the settings.
function show(view) {
  text($('path'), view.path || '(unknown)');
  const m = view.model;
  $('model').value = m ? m.model : '';
  $('baseUrl').value = m ? m.baseUrl : '';
  $('azure').checked = !!(m && m.azure);
  $('apiVersion').value = m ? m.apiVersion : '';
  $('apiKey').value = '';
  $('clearApiKey').checked = false;
  text($('key-state'), '(' + (m ? m.apiKey : 'not set') + ')');
  if (view.error) showError('The configuration file does not load: ' + view.error);
}

port.onMessage.addListener((m) => {
  busy(false);
  if (!m.ok) {
    text($('status'), '');
    showError(m.error);
    return;
  }
  showError('');
  show(m.result);
  text($('status'), m.reply === 'set' ? 'Saved: the next session uses these settings.' : '');
});

$('model-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  busy(true);
  text($('status'), 'Saving…');
  port.postMessage({ cmd: 'set', model: {
    model: $('model').value.trim(), baseUrl: $('baseUrl').value.trim(), apiKey: $('apiKey').value,
    clearApiKey: $('clearApiKey').checked, azure: $('azure').checked, apiVersion: $('apiVersion').value.trim(),
  } });
});

$('remove').addEventListener('click', () => {
  busy(true);
  text($('status'), 'Removing…');
  port.postMessage({ cmd: 'set', model: null });
});

busy(true);
port.postMessage({ cmd: 'get' });
