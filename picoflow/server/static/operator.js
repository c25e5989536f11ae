// picoflow operator page: approve or reject tool calls, answer handed-off conversations.
// Plain JavaScript, no build step. It needs a principal with the "approver" or "operator"
// role when the server has `authorize` set (docs/people-in-the-loop.md).
"use strict";

(function () {
  const SESSION_HEADER = "chat-session-id";
  const KEY_STORE = "picoflow.apiKey";
  const $ = (id) => document.getElementById(id);

  async function api(path, options) {
    for (let attempt = 0; ; attempt += 1) {
      const headers = Object.assign({}, (options || {}).headers);
      const key = sessionStorage.getItem(KEY_STORE);
      if (key) headers.Authorization = "Bearer " + key;
      const response = await fetch(path, Object.assign({}, options, { headers: headers }));
      if (response.status !== 401 || attempt > 0) return response;
      const entered = window.prompt("This server needs an API key. Enter yours:");
      if (!entered || !entered.trim()) return response;
      sessionStorage.setItem(KEY_STORE, entered.trim());
    }
  }

  function say(text) {
    $("status").textContent = text;
  }

  async function post(path, session, body) {
    const headers = { "Content-Type": "application/json" };
    headers[SESSION_HEADER] = session;
    const response = await api(path, { method: "POST", headers: headers, body: JSON.stringify(body) });
    const reply = await response.json();
    say(response.ok ? "Done: " + reply.message : reply.message);
    await refresh();
  }

  function button(label, action) {
    const node = document.createElement("button");
    node.type = "button";
    node.textContent = label;
    node.addEventListener("click", action);
    return node;
  }

  function item(text) {
    const li = document.createElement("li");
    const line = document.createElement("div");
    line.textContent = text;
    li.appendChild(line);
    const actions = document.createElement("div");
    actions.className = "actions";
    li.appendChild(actions);
    return [li, actions];
  }

  function showApprovals(list) {
    const root = $("approvals");
    root.replaceChildren();
    $("no-approvals").hidden = list.length > 0;
    list.forEach((a) => {
      const [li, actions] = item(a.tool + " " + JSON.stringify(a.args) + " (asked by " +
        (a.owner || "a guest") + ", step " + a.step + ")");
      li.dataset.approval = a.id;
      const route = "ai/approvals/" + encodeURIComponent(a.id);
      actions.appendChild(button("Approve", () => post(route, a.session, { decision: "approve" })));
      actions.appendChild(button("Reject", () => {
        const note = window.prompt("Why? (the assistant tells the guest)") || null;
        post(route, a.session, { decision: "reject", note: note });
      }));
      actions.appendChild(button("Edit", () => {
        const text = window.prompt("New arguments (JSON)", JSON.stringify(a.args));
        if (text) post(route, a.session, { decision: "edit", args: JSON.parse(text) });
      }));
      root.appendChild(li);
    });
  }

  function showHandoffs(list) {
    const root = $("handoffs");
    root.replaceChildren();
    $("no-handoffs").hidden = list.length > 0;
    list.forEach((h) => {
      const said = (h.messages || []).map((m) => m.role + ": " + m.text).join(" | ");
      const [li, actions] = item((h.note || "A guest asked for a person.") + (said ? " — " + said : ""));
      li.dataset.session = h.session;
      const box = document.createElement("textarea");
      box.rows = 2;
      box.setAttribute("aria-label", "Reply to the guest");
      li.insertBefore(box, actions);
      actions.appendChild(button("Send reply", () => {
        if (box.value.trim()) post("ai/operator/reply", h.session, { message: box.value.trim() });
      }));
      actions.appendChild(button("Hand back", () => post("ai/operator/return", h.session, {})));
      root.appendChild(li);
    });
  }

  async function refresh() {
    const [approvals, handoffs] = await Promise.all([api("ai/approvals"), api("ai/handoffs")]);
    if (approvals.ok) showApprovals(await approvals.json());
    else say((await approvals.json()).message);
    if (handoffs.ok) showHandoffs(await handoffs.json());
    else say((await handoffs.json()).message);
  }

  $("refresh").addEventListener("click", () => refresh().catch((error) => say(error.message)));
  refresh().catch((error) => say("Could not load what waits: " + error.message));
})();
