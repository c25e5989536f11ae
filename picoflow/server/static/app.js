// picoflow chat page. Plain JavaScript, no build step, nothing loaded from other sites.
//
// It streams turns from POST ai/stream (Server-Sent Events over fetch, since EventSource
// cannot POST), keeps the session id and the visible transcript in sessionStorage (one entry
// per flow), and renders replies as a small, safe subset of markdown: every character of the
// model's text is HTML-escaped before any formatting is added.
"use strict";

(function () {
  // The page sends the dash spelling: reverse proxies that drop underscore headers keep it.
  const SESSION_HEADER = "chat-session-id";
  const $ = (id) => document.getElementById(id);
  const ui = {
    flow: $("flow"), step: $("step"), messages: $("messages"), empty: $("empty"),
    status: $("status"), composer: $("composer"), input: $("input"), send: $("send"),
    reset: $("new-conversation"), saveTest: $("save-test"),
  };
  // "Save as test" (POST ai/scenario) is shown only when the app enables it (scenario_export).
  const canSaveTest = "saveTest" in document.body.dataset;
  let flow = null;
  let chat = blankChat();

  function blankChat() {
    return { session: null, step: null, messages: [], ended: false, lastSession: null };
  }

  // -- storage: one conversation per flow, for this browser tab ------------------------------

  function storageKey(name) {
    return "picoflow.chat." + name;
  }

  function loadChat(name) {
    try {
      const saved = JSON.parse(sessionStorage.getItem(storageKey(name)) || "null");
      return saved && Array.isArray(saved.messages) ? saved : blankChat();
    } catch (error) {
      return blankChat();
    }
  }

  function saveChat() {
    sessionStorage.setItem(storageKey(flow), JSON.stringify(chat));
  }

  // -- the API: with `authorize` set on the server, a 401 asks for an API key once -----------

  const KEY_STORE = "picoflow.apiKey";

  // fetch(), plus `Authorization: Bearer <key>` once the user has given a key for this tab.
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

  // -- markdown subset: tables, lists, headings, paragraphs, **bold**, *italic*, `code` --------

  function escapeHtml(text) {
    return text.replace(/[&<>"']/g, (c) => ({
      "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
    })[c]);
  }

  function inline(text) {
    return escapeHtml(text)
      .replace(/`([^`]+)`/g, "<code>$1</code>")
      .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
      .replace(/(^|[^*\w])\*([^*\s][^*]*)\*(?!\w)/g, "$1<em>$2</em>");
  }

  const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

  function cells(line) {
    let row = line.trim();
    if (row.startsWith("|")) row = row.slice(1);
    if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
    return row.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
  }

  // Tables often say yes/no with emoji (a green check, a red cross). Without an emoji font
  // those are empty boxes, so cells show text marks that every common font has, coloured,
  // with the word for screen readers.
  const MARKS = { "\u2705": "yes", "\u2714": "yes", "\u274c": "no", "\u274e": "no", "\u2716": "no" };
  const GLYPH = { yes: "\u2713", no: "\u2717" };

  function marks(html) {
    return html.replace(/(\u2705|\u2714|\u274c|\u274e|\u2716)\ufe0f?/g, (_, emoji) => {
      const word = MARKS[emoji];
      return '<span class="mark ' + word + '" role="img" aria-label="' + word + '">' +
        GLYPH[word] + "</span>";
    });
  }

  function table(lines) {
    // The rule row's colons align columns: ":-:" centre, "-:" right (prices read better).
    const align = cells(lines[1]).map((c) =>
      c.endsWith(":") ? (c.startsWith(":") ? ' class="center"' : ' class="right"') : "");
    const row = (line, tag) => cells(line).map((c, n) =>
      "<" + tag + (align[n] || "") + ">" + marks(inline(c)) + "</" + tag + ">").join("");
    const head = row(lines[0], "th");
    const body = lines.slice(2).map((line) => "<tr>" + row(line, "td") + "</tr>");
    return '<div class="table-wrap"><table><thead><tr>' + head + "</tr></thead><tbody>" +
      body.join("") + "</tbody></table></div>";
  }

  function takeWhile(lines, start, test) {
    let end = start;
    while (end < lines.length && test(lines[end], end)) end += 1;
    return end;
  }

  const LIST_ITEM = /^\s*([-*+]|\d+[.)])\s+/;
  const HEADING = /^#{1,6}\s/;

  function startsTable(lines, i) {
    return lines[i].includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]);
  }

  // One block starting at line i: [html, index of the next line].
  function block(lines, i) {
    const line = lines[i];
    if (startsTable(lines, i)) {
      const end = takeWhile(lines, i + 2, (l) => l.includes("|") && l.trim() !== "");
      return [table(lines.slice(i, end)), end];
    }
    if (LIST_ITEM.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const end = takeWhile(lines, i, (l) => LIST_ITEM.test(l) && /^\s*\d/.test(l) === ordered);
      // Keep the author's numbers ("book number 3" must mean the third line as shown).
      const items = lines.slice(i, end).map((l) => (ordered ? '<li value="' +
        parseInt(l, 10) + '">' : "<li>") + inline(l.replace(LIST_ITEM, "")) + "</li>");
      const tag = ordered ? "ol" : "ul";
      return ["<" + tag + ">" + items.join("") + "</" + tag + ">", end];
    }
    if (HEADING.test(line)) {
      return ["<p><strong>" + inline(line.replace(/^#+\s*/, "")) + "</strong></p>", i + 1];
    }
    const end = takeWhile(lines, i + 1, (l, j) =>
      l.trim() !== "" && !HEADING.test(l) && !LIST_ITEM.test(l) && !startsTable(lines, j));
    return ["<p>" + lines.slice(i, end).map(inline).join("<br>") + "</p>", end];
  }

  function renderMarkdown(text) {
    const lines = text.replace(/\r\n?/g, "\n").split("\n");
    const html = [];
    let i = 0;
    while (i < lines.length) {
      if (!lines[i].trim()) {
        i += 1;
        continue;
      }
      const [part, next] = block(lines, i);
      html.push(part);
      i = next;
    }
    return html.join("");
  }

  // -- the transcript on screen -------------------------------------------------------------

  function addBubble(role, text, contentType) {
    ui.empty.hidden = true;
    const bubble = document.createElement("div");
    bubble.className = "msg " + role;
    ui.messages.appendChild(bubble);
    fillBubble(bubble, role, text, contentType);
    return bubble;
  }

  function scrollDown() {
    ui.messages.scrollTop = ui.messages.scrollHeight;
  }

  function fillBubble(bubble, role, text, contentType) {
    if (role === "assistant" && contentType !== "streaming") {
      bubble.classList.remove("streaming");
      bubble.innerHTML = renderMarkdown(text); // safe: renderMarkdown escapes all text
    } else {
      bubble.textContent = text;
    }
    scrollDown();
  }

  function addNote(text) {
    const note = document.createElement("p");
    note.className = "note";
    note.textContent = text;
    ui.messages.appendChild(note);
    scrollDown();
  }

  function showStep(step) {
    ui.step.hidden = !step;
    ui.step.textContent = step ? "Step: " + step : "";
  }

  function redraw() {
    ui.messages.querySelectorAll(".msg, .note:not(#empty)").forEach((node) => node.remove());
    ui.empty.hidden = chat.messages.length > 0;
    chat.messages.forEach((m) => addBubble(m.role, m.text, m.contentType));
    if (chat.ended) addNote("This conversation has ended. Send a message to start a new one.");
    showStep(chat.step);
    showSaveTest();
    showTurnActions();
  }

  // The session just talked to, also once it has ended: that is often the one worth a test.
  function showSaveTest() {
    ui.saveTest.hidden = !(canSaveTest && chat.lastSession);
  }

  async function saveTest(event) {
    event.preventDefault();
    const headers = {};
    headers[SESSION_HEADER] = chat.lastSession;
    const response = await api("ai/scenario", { method: "POST", headers: headers });
    if (!response.ok) {
      addNote("Could not save the test: " + (await response.json()).message);
      return;
    }
    const disposition = response.headers.get("Content-Disposition") || "";
    const name = (disposition.match(/filename="([^"]+)"/) || [])[1] || "session.scenario.json";
    const link = document.createElement("a");
    link.href = URL.createObjectURL(await response.blob());
    link.download = name;
    link.click();
    URL.revokeObjectURL(link.href);
  }

  function setBusy(busy) {
    document.body.dataset.busy = String(busy);
    ui.send.disabled = busy;
    ui.reset.disabled = busy;
    ui.flow.disabled = busy;
    if (!busy) ui.status.textContent = "";
    showTurnActions();
  }

  // -- talking to the server ----------------------------------------------------------------

  function parseFrame(frame) {
    let kind = "message";
    let id = null;
    const data = [];
    frame.split("\n").forEach((line) => {
      if (line.startsWith("event:")) kind = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      else if (line.startsWith("id:")) id = line.slice(3).trim();
    });
    return { kind: kind, data: data.length ? JSON.parse(data.join("\n")) : {}, id: id };
  }

  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (frame.trim() && !frame.startsWith(":")) onEvent(parseFrame(frame)); // ":": keep-alive
      }
    }
  }

  // -- a dropped stream is picked up again: GET ai/stream/<turn> with Last-Event-ID ---------

  const RESUME_TRIES = 5;

  // A turn's events up to `done`. When the connection drops first (a phone that locks, a
  // proxy that hangs up), the turn still runs on the server, which keeps its events: the page
  // asks for the ones after the last it got, so the rest of the answer arrives once.
  async function readTurn(response, onEvent) {
    let lastId = null;
    let finished = false;
    const seen = (event) => {
      if (event.id) lastId = event.id;
      if (event.kind === "done") finished = true;
      onEvent(event);
    };
    let failure = null;
    for (let attempt = 1; ; attempt += 1) {
      try {
        if (response) await readEvents(response, seen);
      } catch (error) {
        failure = error; // the connection dropped mid-event: resume after the last whole one
      }
      if (finished || !lastId || attempt > RESUME_TRIES) break;
      ui.status.textContent = "Reconnecting…";
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
      response = await resumeTurn(lastId).catch((error) => {
        failure = error;
        return null;
      });
      if (response && !response.ok) break; // 404: not kept any more; 204: nothing is missing
    }
    if (!finished && failure) throw failure;
  }

  function resumeTurn(lastId) {
    const turn = lastId.slice(0, lastId.lastIndexOf(":"));
    return api("ai/stream/" + encodeURIComponent(turn), { headers: { "Last-Event-ID": lastId } });
  }

  function finishTurn(bubble, reply) {
    chat.pendingTurn = null;
    if (!reply.success) {
      bubble.remove();
      chat.messages.push({ role: "error", text: reply.message });
      addBubble("error", reply.message);
      return;
    }
    chat.session = reply.session || null;
    chat.lastSession = reply.session || chat.lastSession;
    chat.step = reply.step || chat.step;
    chat.messages.push({ role: "assistant", text: reply.message, contentType: reply.contentType });
    fillBubble(bubble, "assistant", reply.message, reply.contentType);
    showStep(chat.step);
    showSaveTest();
    if (reply.completed) {
      chat.session = null;
      chat.ended = true;
      addNote("This conversation has ended. Send a message to start a new one.");
    }
  }

  async function sendMessage(text) {
    setBusy(true);
    chat.ended = false;
    chat.pendingTurn = null;
    chat.messages.push({ role: "user", text: text });
    saveChat(); // a reload from now on shows the message, and (see below) its answer
    addBubble("user", text);
    const headers = { "Content-Type": "application/json" };
    if (chat.session) headers[SESSION_HEADER] = chat.session;
    await followTurn(() => api("ai/stream", {
      method: "POST", headers: headers, body: JSON.stringify({ flowName: flow, message: text }),
    }));
  }

  // A page reloaded while a turn streamed (or a tab brought back) asks for that turn's events
  // again, from its first: the server kept them, and the answer is shown whole, once.
  async function resumePendingTurn() {
    const turn = chat.pendingTurn;
    const last = chat.messages[chat.messages.length - 1];
    if (!turn && last && last.role === "user") {
      // Reloaded before the turn's first event: this page never learnt which turn it was.
      addNote("No answer to your last message reached this page: send it again, or go on.");
    }
    if (!turn || document.body.dataset.busy === "true") return;
    setBusy(true);
    await followTurn(async () => {
      const response = await resumeTurn(turn + ":0");
      if (response.status === 404) {
        return { ok: false, json: async () => ({
          success: false,
          message: "The answer to your last message could not be fetched any more: send it "
            + "again, or go on.",
        }) };
      }
      return response;
    });
  }

  // One turn's events into a new assistant bubble, then its reply; `open` starts the stream.
  async function followTurn(open) {
    const bubble = addBubble("assistant", "", "streaming");
    bubble.classList.add("streaming");
    let streamed = "";
    let reply = null;
    try {
      const response = await open();
      if (!response.ok) {
        reply = await response.json();
      } else {
        await readTurn(response, (event) => {
          if (event.id && !chat.pendingTurn) {
            chat.pendingTurn = event.id.slice(0, event.id.lastIndexOf(":"));
            saveChat(); // the turn's id: what a reload resumes from
          }
          if (event.kind === "token") {
            streamed += event.data.text;
            bubble.textContent = streamed; // plain text until the reply is complete
            scrollDown();
          } else if (event.kind === "retract") {
            // The model call failed after writing this: take it back (lengths in JS's units).
            if (streamed.endsWith(event.data.text)) {
              streamed = streamed.slice(0, streamed.length - event.data.text.length);
            }
            bubble.textContent = streamed;
          } else if (event.kind === "step_changed") {
            showStep(event.data.to);
          } else if (event.kind === "tool_call") {
            ui.status.textContent = "Working on it…"; // a guest never reads tool names
          } else if (event.kind === "approval_requested") {
            addNote("A person needs to approve this before I go on; you can keep writing.");
          } else if (event.kind === "done") {
            reply = event.data;
          }
        });
      }
    } catch (error) {
      reply = { success: false, message: "The server could not be reached: " + error.message };
    }
    finishTurn(bubble, reply || { success: false, message: "The reply ended early; send again." });
    await learnRevision();
    saveChat();
    setBusy(false);
    listen();
    ui.input.focus();
  }

  // -- people in the loop: an approver's decision and an operator's replies arrive here -----

  let listening = null; // the session whose GET ai/events stream is open

  function heard(event) {
    if (event.kind === "approval_resolved") {
      chat.messages.push({ role: "assistant", text: event.data.message });
      addBubble("assistant", event.data.message);
    } else if (event.kind === "operator_message") {
      chat.messages.push({ role: "operator", text: event.data.message });
      addBubble("operator", event.data.message);
    } else {
      return;
    }
    saveChat();
    showTurnActions(); // K9: the last exchange changed; an Undo shown before it goes
  }

  async function listen() {
    const session = chat.session;
    if (!session || listening === session) return;
    listening = session;
    // Open while someone is expected (an approval, an operator); the server sends "idle" then.
    let idle = false;
    while (!idle && listening === session && chat.session === session) {
      let ok = false;
      try {
        const response = await api("ai/events?session=" + encodeURIComponent(session));
        ok = response.ok;
        idle = !ok; // an unknown session: nothing to wait for
        if (ok) {
          await readEvents(response, (event) => {
            if (event.kind === "idle") idle = true;
            else if (chat.session === session) heard(event);
          });
        }
      } catch (error) {
        ok = false; // the server or the network went away: try again in a moment
      }
      if (!ok && !idle) await new Promise((resolve) => setTimeout(resolve, 5000));
    }
    if (listening === session) listening = null;
  }

  // -- undo the last answer, edit the last message (the /ai/sessions/{id} routes) ------------

  // The last exchange, if it may be undone or edited: a user message and its reply in a
  // running session, the turn's revision known and not the session's first turn (that one
  // started the session: there is nothing before it to go back to).
  function lastExchange() {
    const n = chat.messages.length;
    if (!chat.session || n < 2 || document.body.dataset.busy === "true") return null;
    const asked = chat.messages[n - 2];
    if (asked.role !== "user" || chat.messages[n - 1].role !== "assistant") return null;
    return typeof asked.revision === "number" && asked.revision > 0 ? asked : null;
  }

  function sessionRoute(tail) {
    return "ai/sessions/" + encodeURIComponent(chat.session) + tail;
  }

  // After a turn, the revision it saved (the newest in the session's history) goes on the
  // user's message: editing it names that revision. A store that keeps no history (501) or
  // another tab's turn in between leave it unknown, and the buttons do not show.
  async function learnRevision() {
    const n = chat.messages.length;
    const asked = chat.messages[n - 2];
    if (!chat.session || !asked || asked.role !== "user") return;
    if (chat.messages[n - 1].role !== "assistant") return;
    try {
      const response = await api(sessionRoute("/history?limit=1"));
      if (!response.ok) return;
      const listed = await response.json();
      const entry = listed.history[0];
      const turn = entry && ["turn", "edit", "handoff"].includes(entry.action);
      // K9: a tool acted on the world in or after this turn (a booking, an approval): going
      // back would fail, so no Undo or Edit is offered for it.
      const acted = typeof listed.effects_through === "number" &&
        entry && listed.effects_through >= entry.revision;
      if (turn && !acted && entry.message === asked.text) asked.revision = entry.revision;
    } catch (error) {
      // Unknown: no buttons for this exchange.
    }
  }

  function showTurnActions() {
    ui.messages.querySelectorAll(".msg-actions").forEach((node) => node.remove());
    const asked = lastExchange();
    const bubbles = ui.messages.querySelectorAll(".msg");
    if (!asked || bubbles.length < 2) return;
    const question = bubbles[bubbles.length - 2];
    question.after(actionRow("user", "Edit", "Edit your last message",
      () => startEdit(question, asked)));
    bubbles[bubbles.length - 1].after(actionRow("assistant", "Undo", "Undo the last answer",
      undoLast));
  }

  function actionRow(side, label, title, onClick) {
    const row = document.createElement("div");
    row.className = "msg-actions " + side;
    const button = document.createElement("button");
    button.type = "button";
    button.className = label.toLowerCase() + "-last";
    button.textContent = label;
    button.title = title;
    button.setAttribute("aria-label", title);
    button.addEventListener("click", onClick);
    row.appendChild(button);
    return row;
  }

  // POST a history route with a JSON body; the reply's JSON, or a failure to show.
  async function postHistory(tail, body) {
    try {
      const response = await api(sessionRoute(tail), {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      });
      return await response.json();
    } catch (error) {
      return { success: false, message: "The server could not be reached: " + error.message };
    }
  }

  async function undoLast() {
    setBusy(true);
    ui.status.textContent = "Undoing the last answer…";
    const reply = await postHistory("/undo", {});
    if (reply.success) {
      chat.messages.splice(chat.messages.length - 2, 2);
      chat.step = reply.step || chat.step;
      saveChat();
    }
    redraw();
    if (!reply.success) addNote("Could not undo: " + reply.message);
    setBusy(false);
  }

  // The last user message becomes a small form in place; Save runs that turn again.
  function startEdit(bubble, asked) {
    ui.messages.querySelectorAll(".msg-actions").forEach((node) => node.remove());
    const form = document.createElement("form");
    form.className = "msg editing";
    const box = document.createElement("textarea");
    box.value = asked.text;
    box.rows = 2;
    box.setAttribute("aria-label", "Your message, edited");
    const buttons = document.createElement("div");
    buttons.className = "edit-buttons";
    const cancel = document.createElement("button");
    cancel.type = "button";
    cancel.textContent = "Cancel";
    cancel.addEventListener("click", redraw);
    const save = document.createElement("button");
    save.type = "submit";
    save.textContent = "Save";
    buttons.append(cancel, save);
    form.append(box, buttons);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      saveEdit(asked, box.value.trim());
    });
    box.addEventListener("keydown", (event) => {
      if (event.key === "Escape") redraw();
    });
    bubble.replaceWith(form);
    box.focus();
  }

  async function saveEdit(asked, text) {
    if (!text || text === asked.text) {
      redraw();
      return;
    }
    setBusy(true);
    ui.status.textContent = "Sending the edited message…";
    const reply = await postHistory("/edit", { revision: asked.revision, message: text });
    if (reply.success) {
      const n = chat.messages.length;
      chat.messages[n - 2] = { role: "user", text: text };
      chat.messages[n - 1] = { role: "assistant", text: reply.message, contentType: reply.contentType };
      chat.step = reply.step || chat.step;
      if (reply.completed) {
        chat.session = null;
        chat.ended = true;
      }
      await learnRevision();
      saveChat();
    }
    redraw();
    if (!reply.success) addNote("Could not edit the message: " + reply.message);
    setBusy(false);
  }

  async function newConversation() {
    if (chat.session) {
      const headers = {};
      headers[SESSION_HEADER] = chat.session;
      try {
        await api("ai/end", { method: "POST", headers: headers });
      } catch (error) {
        // Ending is a courtesy to the server; the next message starts a new session anyway.
      }
    }
    chat = blankChat();
    saveChat();
    redraw();
    ui.input.focus();
  }

  function switchFlow(name) {
    flow = name;
    chat = loadChat(name);
    const url = new URL(window.location.href);
    url.searchParams.set("flow", name);
    window.history.replaceState(null, "", url);
    redraw();
  }

  async function start() {
    const response = await api("ai/flows");
    if (!response.ok) {
      addNote((await response.json()).message);
      setBusy(true);
      return;
    }
    const names = await response.json();
    names.forEach((name) => ui.flow.add(new Option(name, name)));
    const wanted = new URLSearchParams(window.location.search).get("flow");
    if (!names.length) {
      addNote("This server has no flows.");
      setBusy(true);
      return;
    }
    ui.flow.value = names.includes(wanted) ? wanted : names[0];
    switchFlow(ui.flow.value);
    listen();
    resumePendingTurn();
  }

  ui.composer.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = ui.input.value.trim();
    if (!text || document.body.dataset.busy === "true") return;
    ui.input.value = "";
    sendMessage(text);
  });
  ui.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      ui.composer.requestSubmit();
    }
  });
  ui.reset.addEventListener("click", newConversation);
  ui.saveTest.addEventListener("click", saveTest);
  ui.flow.addEventListener("change", () => switchFlow(ui.flow.value));
  start().catch((error) => addNote("Could not load the flows: " + error.message));
})();
