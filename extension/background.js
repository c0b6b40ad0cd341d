// background.js: the aegis extension's service worker.
//
// It holds one native messaging port to the aegis host per session (an
// open port also keeps this worker alive), carries the popup's commands
// (start, abort, approve, deny) to the host and the session's events back
// to the popup, and carries out the host's requests on the session's tab:
// the shared observer and the action executor run there as content
// scripts (observer.js, executor.js) in the extension's isolated world.
// The protocol is nativehost/PROTOCOL.md in the aegis repository. This
// file holds what every part shares (constants, the protocol's error
// codes) and loads the worker's parts in order (importScripts, below).
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

// The worker's parts, loaded in this order while the worker starts (Chrome
// allows importScripts only then). They share one global scope: each uses
// what this file and the parts before it define while loading, and calls
// into later parts only from listeners and requests.
importScripts(
  'navigation.js', // navigation tracking: commits, loads and errors of each tab's main frame
  'port.js', // the native port: calls, responses, the host's messages; connectDriverPort
  'tabs.js', // the host's requests: the extension driver's calls on a tab
  'session.js', // the session as the popup sees it; the popup's and options page's ports
  'boundary.js', // the session boundary: declarativeNetRequest rules, refusals, popups, WebRTC
  'settings.js', // the options page's model settings, read and written through the host
);

// The worker's top-level code has run: everything above is defined. A
// harness that evaluates code in this worker (nativehost/nativehosttest)
// waits for this signal rather than for time to pass: it reads
// self.aegisReady, or listens for the 'aegisready' event when it got in
// before the script ran. The signal grants nothing.
self.aegisReady = true;
self.dispatchEvent(new Event('aegisready'));
