// The aegis live console: shows one session's stream and sends its control
// requests (seed 003). Every string from the stream comes from the model or
// the page and is hostile: it is only ever set as textContent.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const tokenKey = "aegis.live.token";

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

  const state = { token: token(), id: "", ws: null, pending: null, ended: false, n: 0, retry: 0 };

  function notice(text) {
    const el = $("notice");
    el.textContent = text;
    el.hidden = !text;
  }

  async function api(path) {
    const res = await fetch(path, { headers: { Authorization: "Bearer " + state.token } });
    if (!res.ok) throw new Error(path + ": HTTP " + res.status);
    return res;
  }

  async function pickSession() {
    const want = new URLSearchParams(location.search).get("session");
    if (want) return want;
    const list = (await (await api("/v1/sessions")).json()).sessions || [];
    if (!list.length) throw new Error("no session on this server yet");
    const last = list[list.length - 1];
    return last.id;
  }

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text == null ? "" : String(text);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function row(ev, what, cls) {
    const tr = document.createElement("tr");
    tr.dataset.type = ev.type;
    if (cls) tr.className = cls;
    cell(tr, ++state.n);
    cell(tr, (ev.timestamp || "").replace(/^.*T/, "").replace(/\..*$/, ""));
    cell(tr, ev.type === "action" ? ev.actionType : ev.type);
    cell(tr, ev.riskLevel || "", ev.riskLevel ? "risk-" + ev.riskLevel : "");
    cell(tr, what, "what");
    $("steps").tBodies[0].appendChild(tr);
  }

  async function screenshot(ev) {
    const uri = String(ev.url || "");
    if (!/^artifacts\/[A-Za-z0-9][A-Za-z0-9._-]*\.(png|jpg|webp)$/.test(uri)) return;
    try {
      const blob = await (await api("/v1/sessions/" + encodeURIComponent(state.id) + "/" + uri)).blob();
      const img = document.createElement("img");
      img.alt = "screenshot " + uri;
      img.src = URL.createObjectURL(blob);
      $("shots").appendChild(img);
    } catch (e) {
      row(ev, "screenshot not available: " + e.message, "error");
    }
  }

  function showApproval(ev) {
    state.pending = ev;
    $("approval-summary").textContent = ev.actionType + ": " + ev.summary;
    $("approval-url").textContent = ev.url || "";
    $("approve").disabled = $("deny").disabled = false;
    $("approval").hidden = false;
  }

  function hideApproval() {
    state.pending = null;
    $("approval").hidden = true;
  }

  function onEvent(ev) {
    switch (ev.type) {
      case "session.started":
        row(ev, "session " + ev.computerUseSessionId + " started");
        break;
      case "action":
        row(ev, ev.summary + (ev.url ? "  — " + ev.url : ""));
        break;
      case "screenshot":
        row(ev, "screenshot " + (ev.width ? ev.width + "×" + ev.height : ""));
        screenshot(ev);
        break;
      case "approval_required":
        row(ev, "approval required: " + ev.summary, "approval");
        showApproval(ev);
        break;
      case "approval_resolved":
        row(ev, "approval " + (ev.decision === "approve" ? "granted" : "refused") + " for " + ev.actionId, "approval");
        if (state.pending && state.pending.actionId === ev.actionId) hideApproval();
        break;
      case "session.ended": {
        state.ended = true;
        hideApproval();
        row(ev, "session ended: " + ev.status + ": " + ev.summary);
        const st = $("status");
        st.textContent = "Session " + ev.status + ": " + ev.summary;
        st.className = ev.status === "completed" ? "" : "bad";
        st.hidden = false;
        $("abort").disabled = true;
        break;
      }
      case "error":
        row(ev, ev.code + ": " + ev.message, "error");
        break;
      default:
        row(ev, "unknown event");
    }
  }

  function send(req) {
    if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify(req));
  }

  function connect() {
    $("steps").tBodies[0].replaceChildren();
    $("shots").replaceChildren();
    state.n = 0;
    hideApproval();
    const url = "ws://" + location.host + "/v1/sessions/" + encodeURIComponent(state.id) + "/stream?client=console";
    const ws = new WebSocket(url, ["aegis.v1", "aegis.token." + state.token]);
    state.ws = ws;
    ws.onopen = () => {
      state.retry = 0;
      $("conn").textContent = "live";
      $("conn").className = "badge live";
      $("abort").disabled = state.ended;
      notice("");
    };
    ws.onmessage = (m) => {
      let ev;
      try { ev = JSON.parse(m.data); } catch (e) { return; }
      onEvent(ev);
    };
    ws.onclose = (c) => {
      $("conn").textContent = "offline";
      $("conn").className = "badge";
      $("abort").disabled = true;
      if (state.ended) return;
      // Reconnect with backoff: the stream replays the session from its start.
      state.retry = Math.min(state.retry + 1, 5);
      notice("disconnected (" + c.code + (c.reason ? ": " + c.reason : "") + "); reconnecting…");
      setTimeout(connect, 500 * state.retry);
    };
  }

  function decide(decision) {
    if (!state.pending) return;
    $("approve").disabled = $("deny").disabled = true;
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
      notice("No token: open the address aegis printed, which ends in #token=…");
      return;
    }
    try {
      state.id = await pickSession();
    } catch (e) {
      notice(e.message);
      return;
    }
    $("session").textContent = "session " + state.id;
    connect();
  })();
})();
