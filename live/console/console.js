// The aegis live console: shows one session's stream, step by step, and
// sends its control requests (seed 003). Every string from the stream comes
// from the model or the page and is hostile: it is only ever set as
// textContent.
//
// Steps: "step N" is the stepIndex of the gate's decision, which the server
// sends with the events (frames of type aegis.decision, ?decisions=1): the
// number the CLI prints as "step N/BUDGET" and the report shows. An event
// belongs to the step of the last decision recorded before it; the console
// numbers nothing itself.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const tokenKey = "aegis.live.token";
  // A dropped connection is retried this many times, waiting 1, 2, 4, 8
  // and 8 seconds; a refused token is never retried.
  const maxRetries = 5;
  // A newly shown approval's buttons wait this long before they take a
  // click (as a browser's permission prompt does); a click disables both
  // until another approval is shown. A second click meant for the last
  // prompt never answers the next one unseen.
  const armDelayMs = 750;

  // The token comes in the URL's fragment (never sent to a server); it is
  // kept for this tab only and taken out of the address bar.
  function token() {
    const m = /(?:^#|&)token=([A-Za-z0-9_-]+)/.exec(location.hash);
    if (m) {
      sessionStorage.setItem(tokenKey, m[1]);
      history.replaceState(null, "", location.pathname + location.search);
    }
    return sessionStorage.getItem(tokenKey) || "";
  }

  const state = {
    token: token(), id: "", ws: null, pending: null, ended: false, stopped: false, retries: 0,
    answered: null, // the approval_required event a click answered
    armTimer: 0,
    step: 0, // the stepIndex of the last decision received
    sections: new Map(), // stepIndex → tbody
    rows: new Map(), // actionId → the row of the action's decision
    notes: new Map(), // actionId → its last decision
  };

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text != null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function notice(parts) {
    const n = $("notice");
    n.replaceChildren();
    if (!parts) {
      n.hidden = true;
      return;
    }
    for (const p of parts) n.appendChild(typeof p === "string" ? document.createTextNode(p) : p);
    n.hidden = false;
  }

  function badge(text, cls) {
    $("conn").textContent = text;
    $("conn").className = "badge" + (cls ? " " + cls : "");
  }

  // refused says, once and for good, that the token does not open this
  // console; nothing is tried again.
  function refused(why) {
    state.stopped = true;
    badge("refused", "bad");
    $("abort").hidden = true;
    $("session").textContent = "aegis live console · not connected";
    notice([el("strong", why + " "),
      "Each run of aegis makes a new token. Open the address the terminal printed after " +
      "\"aegis: live console:\" (it ends in #token=…); this page will not try again."]);
  }

  // check asks the server for its sessions: the list, "refused" (the
  // token is wrong or stale) or "gone" (no answer).
  async function check() {
    let res;
    try {
      res = await fetch("/v1/sessions", { headers: { Authorization: "Bearer " + state.token }, cache: "no-store" });
    } catch (e) {
      return "gone";
    }
    if (res.status === 401) return "refused";
    if (!res.ok) return "gone";
    try {
      return (await res.json()).sessions || [];
    } catch (e) {
      return "gone";
    }
  }

  function showSession(list) {
    const want = new URLSearchParams(location.search).get("session");
    const s = want ? list.find((x) => x.id === want) : list[list.length - 1];
    if (!s) return false;
    state.id = s.id;
    const goal = (s.goal || "").trim();
    $("goal").textContent = goal || "aegis live console";
    document.title = (goal ? goal + " · " : "") + "aegis live console";
    const p = $("session");
    p.replaceChildren(document.createTextNode("aegis live console · session "), el("code", s.id));
    return true;
  }

  // section returns the table body of step n (0: before the first step),
  // making it, in step order, when it is new.
  function section(n) {
    let body = state.sections.get(n);
    if (body) return body;
    const sec = el("section", null, "step");
    sec.dataset.step = String(n);
    const h = el("h2", n > 0 ? "Step " + n : "Start");
    h.id = "step-" + n;
    sec.setAttribute("aria-labelledby", h.id);
    const table = el("table");
    const head = table.createTHead().insertRow();
    for (const t of ["time", "action", "risk", "decision", "details"]) {
      const th = el("th", t);
      th.scope = "col";
      head.appendChild(th);
    }
    body = table.createTBody();
    sec.append(h, table);
    let before = null;
    for (const [k, b] of state.sections) {
      if (k > n && (before === null || k < before[0])) before = [k, b];
    }
    $("steps").insertBefore(sec, before ? before[1].closest("section") : null);
    state.sections.set(n, body);
    return body;
  }

  function time(ts) {
    return String(ts || "").replace(/^.*T/, "").replace(/\..*$/, "").replace(/Z$/, "");
  }

  function setRisk(td, risk) {
    td.textContent = risk || "";
    td.className = risk ? "risk-" + risk : "";
  }

  function setResult(td, result) {
    td.textContent = result || "";
    td.className = result ? "result-" + result : "";
  }

  // row adds a row to step n: time, action, risk, decision, details.
  function row(n, kind, cells) {
    const tr = el("tr", null, kind);
    tr.dataset.kind = kind;
    tr.dataset.step = String(n);
    tr.appendChild(el("td", time(cells.time)));
    tr.appendChild(el("td", cells.action || ""));
    const risk = el("td");
    setRisk(risk, cells.risk);
    tr.appendChild(risk);
    const res = el("td");
    setResult(res, cells.result);
    tr.appendChild(res);
    tr.appendChild(el("td", cells.what || "", "what"));
    section(n).appendChild(tr);
    return tr;
  }

  function onDecision(d) {
    state.step = d.stepIndex;
    const what = d.result === "denied" && d.rules ? "denied by " + d.rules.join(", ") : "";
    if (d.actionId) state.notes.set(d.actionId, d);
    let tr = !d.effect && d.actionId ? state.rows.get(d.actionId) : null;
    if (tr && tr.dataset.step === String(d.stepIndex)) {
      // The same action decided again (paused, then approved or denied):
      // one row per action, as the CLI prints one line.
      setRisk(tr.cells[2], d.risk);
      setResult(tr.cells[3], d.result);
      if (what) tr.cells[4].textContent = what;
    } else {
      // The action's id is the model's name for it, not a step number:
      // kept out of sight (title), so that "step N" is the one number shown.
      const label = (d.effect ? "effect of " : "") + (d.actionType || "action");
      tr = row(d.stepIndex, "decision", { action: label, risk: d.risk, result: d.result, what: what });
      if (d.actionId) tr.cells[1].title = "action id " + d.actionId;
      tr.dataset.actionType = d.actionType || "";
      tr.dataset.actionId = d.actionId || "";
      if (d.effect) tr.dataset.effect = "true";
      else if (d.actionId) state.rows.set(d.actionId, tr);
    }
    tr.dataset.result = d.result;
  }

  // stepOf is the step an event belongs to: its action's, else the last
  // decision's.
  function stepOf(ev) {
    const d = ev.actionId && state.notes.get(ev.actionId);
    return d ? d.stepIndex : state.step;
  }

  async function screenshot(ev, n) {
    const uri = String(ev.url || "");
    if (!/^artifacts\/[A-Za-z0-9][A-Za-z0-9._-]*\.(png|jpg|webp)$/.test(uri)) return;
    const size = ev.width ? ev.width + "×" + ev.height : "";
    const tr = row(n, "screenshot", { time: ev.timestamp, action: "screenshot", what: "" });
    const fig = el("figure");
    tr.cells[4].appendChild(fig);
    try {
      const res = await fetch("/v1/sessions/" + encodeURIComponent(state.id) + "/" + uri, { headers: { Authorization: "Bearer " + state.token } });
      if (!res.ok) throw new Error("HTTP " + res.status);
      const img = el("img");
      img.alt = "screenshot of step " + n + (size ? " (" + size + ")" : "");
      img.src = URL.createObjectURL(await res.blob());
      fig.append(img, el("figcaption", uri + (size ? ", " + size : "")));
    } catch (e) {
      fig.append(el("figcaption", "screenshot " + uri + " not available: " + e.message));
    }
  }

  function showApproval(ev, n) {
    state.pending = ev;
    const d = state.notes.get(ev.actionId);
    $("approval-title").textContent = "Approval required" + (n > 0 ? " for step " + n : "");
    const risk = $("approval-risk");
    risk.textContent = d && d.risk ? d.risk + " risk" : "";
    risk.className = d && d.risk ? "risk-" + d.risk : "";
    $("approval-summary").textContent = ev.actionType + ": " + ev.summary;
    $("approval-url").textContent = ev.url || "";
    setAnswerable(false);
    clearTimeout(state.armTimer);
    state.armTimer = setTimeout(() => {
      if (state.pending === ev && state.answered !== ev) setAnswerable(true);
    }, armDelayMs);
    $("approval").hidden = false;
  }

  function setAnswerable(on) {
    $("approve").disabled = $("deny").disabled = !on;
  }

  function hideApproval() {
    state.pending = null;
    clearTimeout(state.armTimer);
    setAnswerable(false);
    $("approval").hidden = true;
  }

  function onEvent(ev) {
    const n = stepOf(ev);
    const d = ev.actionId ? state.notes.get(ev.actionId) : null;
    switch (ev.type) {
      case "session.started":
        row(n, "event", { time: ev.timestamp, action: "start", what: "session " + ev.computerUseSessionId + " started" });
        break;
      case "action": {
        const what = ev.summary + (ev.url ? " — " + ev.url : "");
        const tr = state.rows.get(ev.actionId);
        if (tr) {
          tr.cells[0].textContent = time(ev.timestamp);
          tr.cells[4].textContent = what;
          tr.dataset.ran = "true";
        } else {
          row(n, "action", { time: ev.timestamp, action: ev.actionType, risk: ev.riskLevel, what: what }).dataset.actionType = ev.actionType;
        }
        break;
      }
      case "screenshot":
        screenshot(ev, n);
        break;
      case "approval_required":
        row(n, "approval", { time: ev.timestamp, action: "approval", risk: d ? d.risk : "", result: "paused", what: "approval required: " + ev.actionType + ": " + ev.summary });
        showApproval(ev, n);
        break;
      case "approval_resolved":
        row(n, "approval", {
          time: ev.timestamp, action: "approval", risk: d ? d.risk : "",
          result: ev.decision === "approve" ? "approved" : "denied",
          what: "approval " + (ev.decision === "approve" ? "granted" : "refused"),
        });
        if (state.pending && state.pending.actionId === ev.actionId) hideApproval();
        break;
      case "session.ended": {
        state.ended = true;
        hideApproval();
        row(n, "event", { time: ev.timestamp, action: "end", what: "session ended — " + ev.summary });
        const st = $("status");
        st.replaceChildren(el("h2", "Session " + ev.status), el("p", ev.summary));
        st.className = ev.status === "completed" ? "ok" : "bad";
        st.hidden = false;
        $("abort").hidden = true; // nothing left to abort
        badge("ended");
        break;
      }
      case "error":
        row(n, "error", { time: ev.timestamp, action: "error", what: ev.code + ": " + ev.message });
        break;
      default:
        row(n, "event", { time: ev.timestamp, action: String(ev.type), what: "unknown event" });
    }
  }

  function send(req) {
    if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify(req));
  }

  function reset() {
    $("steps").replaceChildren();
    state.sections.clear();
    state.rows.clear();
    state.notes.clear();
    state.step = 0;
    $("abort").hidden = false;
    hideApproval();
  }

  function connect() {
    reset();
    const url = "ws://" + location.host + "/v1/sessions/" + encodeURIComponent(state.id) + "/stream?client=console&decisions=1";
    const ws = new WebSocket(url, ["aegis.v1", "aegis.token." + state.token]);
    state.ws = ws;
    ws.onopen = () => {
      badge("live", "live");
      $("abort").disabled = state.ended;
      notice(null);
    };
    ws.onmessage = (m) => {
      state.retries = 0; // the stream answers: a drop later starts the count again
      let ev;
      try { ev = JSON.parse(m.data); } catch (e) { return; }
      if (ev && ev.type === "aegis.decision") onDecision(ev);
      else if (ev) onEvent(ev);
    };
    ws.onclose = (c) => {
      $("abort").disabled = true;
      if (state.ended) {
        badge("ended");
        return;
      }
      dropped(c.code, c.reason);
    };
  }

  // dropped retries a lost connection a bounded number of times, asking
  // first whether the token still opens the server: a refusal stops.
  function dropped(code, reason) {
    badge("offline", "bad");
    if (state.stopped) return;
    if (state.retries >= maxRetries) {
      state.stopped = true;
      notice([el("strong", "Lost the connection to aegis."),
        " Tried " + maxRetries + " times: the run may have ended and its console closed. Reload this page to try again."]);
      return;
    }
    state.retries++;
    const wait = Math.min(1000 * 2 ** (state.retries - 1), 8000);
    notice(["Connection lost" + (code ? " (" + code + (reason ? ": " + reason : "") + ")" : "") +
      "; trying again in " + wait / 1000 + " s (attempt " + state.retries + " of " + maxRetries + ")…"]);
    setTimeout(async () => {
      const r = await check();
      if (r === "refused") refused("The server no longer accepts this page's token.");
      else if (r === "gone") dropped(0, "");
      else if (state.id || showSession(r)) connect();
      else dropped(0, "");
    }, wait);
  }

  // decide answers the approval shown, once (the buttons' ids are the
  // decisions).
  function decide(decision) {
    if ($(decision).disabled || !state.pending || state.answered === state.pending) return;
    state.answered = state.pending;
    setAnswerable(false);
    send({ action: "decision", computerUseSessionId: state.id, actionId: state.pending.actionId, decision: decision });
  }

  $("approve").addEventListener("click", () => decide("approve"));
  $("deny").addEventListener("click", () => decide("deny"));
  $("abort").addEventListener("click", () => {
    send({ action: "abort", computerUseSessionId: state.id, reason: "aborted from the web console" });
    $("abort").disabled = true;
  });

  (async () => {
    if (!state.token) {
      refused("This address carries no token.");
      return;
    }
    const r = await check();
    if (r === "refused") {
      refused("The server refused this page's token: it is wrong, or from an earlier run.");
      return;
    }
    if (r === "gone") {
      dropped(0, "");
      return;
    }
    if (!showSession(r)) {
      badge("offline", "bad");
      notice(["This server has no such session (yet). Open the address the terminal printed for this run."]);
      return;
    }
    connect();
  })();
})();
