// The chat page's behaviour: keep the workspace API key for this tab, list, start,
// rename and delete conversations, send a question and show its answer as the server
// streams it (server-sent events read from a fetch body, since EventSource can neither
// POST nor send an Authorization header), rendered from a small Markdown subset, with
// each [n] in the answer previewed on hover and opened in the sources panel on click,
// where the passage shows what the answer quoted from it marked;
// stop an answer while it streams; rate answers; list, upload (several files at once) and
// delete documents; say which key to paste, and name the workspace of the key accepted.
//
// Plain script, no build step and no third-party code: the page works offline. Every
// text from the server is set with textContent or built into elements, never parsed as
// HTML.
//
// DOM hooks (tests/api/test_chat_page.py relies on them; keep them stable):
//   #api-key #forget-key #new-conversation #question #send #status #log
//   #key-hint (shown until a key is accepted: which key to paste)
//   #workspace[data-workspace] > #workspace-name (shown once a key is accepted)
//   #stop (shown while an answer streams)
//   #conversation[data-id]            the open conversation
//   #conversations > li.conversation-item[data-id]
//       .conversation-title (select; its text in .conversation-title-text) .rename .delete,
//       and while renaming
//       form.rename-form > input.rename-input (Enter saves, Escape cancels)
//   #log > li.turn[data-state=streaming|done|error|pending|stopped][data-no-answer]
//       [data-turn-id][data-confidence=high|low]
//       .question .rewrite ("searched for: …") .answer-text[data-tokens] (Markdown as
//       p, p.md-heading, br, strong, em, code, pre.md-code > code, ul, ol, li)
//       a.cite[data-n] (href #turn-T-source-n) .notice (not found) .confidence-note
//       (a close call: low confidence) .repetition-note
//       .stopped-note (stopped while it streamed, or stored as stopped)
//       .fallback-note (the LLM failed: an extractive answer) .answer-error (failed turn)
//       a.md-link (an http(s) link of the answer's Markdown)
//       .sources > li.source#turn-T-source-n > button.source-open[data-n]
//       (.badge .source-title .page; opens the panel: the passage is shown there only)
//       .feedback[data-rating] (.thumb-up .thumb-down [aria-pressed] .feedback-comment)
//   #cite-preview (role=tooltip: .preview-title .preview-page .preview-snippet)
//   #sources-panel (#panel-body > .panel-source[data-n].selected: .panel-title
//       .panel-page .panel-chunk[data-quoted] button.load-text), #close-panel,
//       #document-view (#document-title, #document-text[data-document-id])
//   mark.quoted (in .panel-chunk, .preview-snippet and #document-text): what the
//       answer quoted with that [n], found word for word (a paraphrase marks nothing)
//   #documents > li.document-item[data-id][data-status=processing|ready|failed]
//       (.document-title .document-state button.delete-document), #more-documents,
//       #documents-status[data-kind=done|error]
//   #upload-file (multiple), #upload-status[data-status=uploading|processing|ready|failed]
//       [data-n-chunks] (one file's state; for several, their count, then the total)
//   #upload-list > li.upload-item[data-status=waiting|uploading|processing|ready|failed]
//       [data-n-chunks] (one per file, when several are uploaded at once)
//   #skip-link (to #question)
//
// The open conversation's id is kept in session storage too (CONVERSATION_STORAGE), so
// a reload reopens it while it exists.
"use strict";

(() => {
  const KEY_STORAGE = "convrag.apiKey";
  const CONVERSATION_STORAGE = "convrag.conversation";
  const byId = (id) => document.getElementById(id);
  const keyInput = byId("api-key");
  const newButton = byId("new-conversation");
  const forgetButton = byId("forget-key");
  const conversationLine = byId("conversation");
  const conversationList = byId("conversations");
  const moreButton = byId("more-conversations");
  const statusLine = byId("status");
  const log = byId("log");
  const form = byId("ask");
  const question = byId("question");
  const send = byId("send");
  const stopButton = byId("stop");
  const preview = byId("cite-preview");
  const panel = byId("sources-panel");
  const panelBody = byId("panel-body");
  const documentView = byId("document-view");
  const documentTitle = byId("document-title");
  const documentText = byId("document-text");
  const uploadInput = byId("upload-file");
  const uploadStatus = byId("upload-status");
  const uploadList = byId("upload-list");
  const keyHint = byId("key-hint");
  const workspaceLine = byId("workspace");
  const workspaceName = byId("workspace-name");
  const documentList = byId("documents");
  const moreDocuments = byId("more-documents");
  const documentsStatus = byId("documents-status");
  const documentsHeading = byId("documents-heading");

  let conversationId = null;
  let turnCount = 0;
  let busy = false;
  let nextCursor = null;
  let documentsCursor = null;
  /** The message being answered: its turn, conversation and fetch's AbortController. */
  let streaming = null;
  /** First questions of conversations the server has not titled yet, by conversation id:
   * the sidebar shows them meanwhile (the server titles a conversation once an answer
   * ends). */
  const provisionalTitles = new Map();
  /** The [n] link that opened the sources panel: focus goes back to it on close. */
  let panelOpener = null;
  /** Every turn on the page, by its number (the T of #turn-T-source-n). */
  const turns = new Map();

  /** An HTTP error reply: its status and the server's `detail` line. */
  class ApiError extends Error {
    constructor(status, detail, retryAfter) {
      super(`HTTP ${status}: ${detail}`);
      this.status = status;
      this.detail = detail;
      this.retryAfter = retryAfter;
    }
  }

  /** A turn that failed after its stream started (the `error` event). */
  class TurnError extends Error {
    constructor(code, message) {
      super(message);
      this.code = code;
    }
  }

  /** Something the user has to do first (no key, no question). */
  class UsageError extends Error {}

  // The key is kept in session storage: this tab only, gone when it closes. Storage can
  // be switched off; the page then works without remembering the key.
  function loadKey() {
    try {
      return sessionStorage.getItem(KEY_STORAGE) || "";
    } catch {
      return "";
    }
  }

  function saveKey(value) {
    store(KEY_STORAGE, value);
  }

  function store(name, value) {
    try {
      if (value) sessionStorage.setItem(name, value);
      else sessionStorage.removeItem(name);
    } catch {
      // Not stored: the value lasts for this visit only.
    }
  }

  function loadConversationId() {
    try {
      return sessionStorage.getItem(CONVERSATION_STORAGE) || "";
    } catch {
      return "";
    }
  }

  function showStatus(message) {
    statusLine.textContent = message;
    statusLine.hidden = false;
    delete statusLine.dataset.kind;
  }

  /** The sentence for a failure; a refused key's is cleared once a key works. */
  function showError(error) {
    showStatus(describe(error));
    if (error instanceof ApiError && error.status === 401) {
      statusLine.dataset.kind = "key";
      showKeyHint();
    }
  }

  // ---- The key's workspace ------------------------------------------------------------

  /** No key accepted (none yet, forgotten or refused): say which key to paste. */
  function showKeyHint() {
    keyHint.hidden = false;
    workspaceLine.hidden = true;
    workspaceName.textContent = "";
    delete workspaceLine.dataset.workspace;
  }

  /** A key was accepted: name the workspace it opens, in place of the hint. */
  function showWorkspace(name) {
    workspaceName.textContent = name;
    workspaceLine.dataset.workspace = name;
    workspaceLine.hidden = false;
    keyHint.hidden = true;
  }

  /** Ask which workspace the pasted key opens (GET v1/workspace) and name it; with no
   * key, or one refused, the hint stays. The answer for a key replaced meanwhile is
   * dropped. A failure is said by the list loads that run beside this one. */
  async function refreshWorkspace() {
    const key = keyInput.value.trim();
    if (!key) {
      showKeyHint();
      return;
    }
    try {
      const body = await (await api("v1/workspace")).json();
      if (keyInput.value.trim() === key) showWorkspace(String(body.workspace));
    } catch {
      if (keyInput.value.trim() === key) showKeyHint();
    }
  }

  function clearStatus() {
    statusLine.textContent = "";
    statusLine.hidden = true;
    delete statusLine.dataset.kind;
  }

  /** A readable sentence for any failure, naming the HTTP status and what to do. */
  function describe(error) {
    if (error instanceof ApiError) {
      const detail = error.detail ? `: ${error.detail}` : "";
      switch (error.status) {
        case 401:
          return `The API key was refused (401)${detail}. Paste a valid workspace API key.`;
        case 404:
          return `Not found (404)${detail}. Start a new conversation.`;
        case 409:
          if (/being deleted/.test(error.detail || "")) {
            return "This conversation is being deleted (409). Start a new conversation.";
          }
          // The server's detail says the same thing again: left out.
          return "This conversation is still answering the previous question (409). Wait for that answer, then try again.";
        case 422:
          return `The request was refused (422)${detail}.`;
        case 429: {
          const wait = error.retryAfter ? ` Retry in ${error.retryAfter} s.` : "";
          return `Too many requests (429)${detail}.${wait}`;
        }
        default:
          return `The server answered ${error.status}${detail}.`;
      }
    }
    if (error instanceof TurnError) return `The answer failed (${error.code}): ${error.message}`;
    if (error instanceof UsageError) return error.message;
    // fetch() rejects with a TypeError when the request never got a reply.
    if (error instanceof TypeError) return `Could not reach the server: ${error.message}`;
    return `The answer could not be read: ${error.message}`;
  }

  async function apiError(response) {
    let detail = response.statusText;
    try {
      const body = await response.json();
      if (typeof body.detail === "string") detail = body.detail;
      else if (body.detail !== undefined) detail = JSON.stringify(body.detail);
    } catch {
      // Not JSON: keep the status text.
    }
    return new ApiError(response.status, detail, response.headers.get("Retry-After"));
  }

  /** fetch() with the key as a bearer token; an error reply becomes an ApiError. Paths
   * are relative to the page, so the page also works behind a proxy's path prefix. */
  async function api(path, init = {}) {
    const key = keyInput.value.trim();
    if (!key) throw new UsageError("Paste a workspace API key first.");
    const headers = new Headers(init.headers || {});
    headers.set("Authorization", `Bearer ${key}`);
    const response = await fetch(new URL(path, document.baseURI), { ...init, headers });
    if (!response.ok) throw await apiError(response);
    // The key worked: a "key refused" line from an earlier key no longer holds.
    if (statusLine.dataset.kind === "key") clearStatus();
    return response;
  }

  /** Whether the error is a 404 for a conversation (deleted, perhaps in another tab). */
  function isGone(error) {
    return error instanceof ApiError && error.status === 404;
  }

  /** A conversation that no longer exists: say so, and drop it from the page. */
  function conversationGone(id) {
    showStatus("This conversation no longer exists (it was deleted, perhaps in another tab).");
    const item = [...conversationList.children].find((i) => i.dataset.id === id);
    if (item) item.remove();
    if (id === conversationId) {
      forgetConversation();
      clearLog();
    }
  }

  function setBusy(value) {
    busy = value;
    send.disabled = value;
    newButton.disabled = value;
    form.setAttribute("aria-busy", String(value));
  }

  function showConversation(id, title) {
    conversationId = id;
    store(CONVERSATION_STORAGE, id);
    conversationLine.textContent = title ? `${title}` : `Conversation ${id}`;
    conversationLine.dataset.id = id;
    for (const item of conversationList.children) {
      const current = item.dataset.id === id;
      item.classList.toggle("active", current);
      if (current) item.setAttribute("aria-current", "true");
      else item.removeAttribute("aria-current");
    }
  }

  function clearLog() {
    log.replaceChildren();
    turns.clear();
    closePanel();
  }

  function forgetConversation() {
    conversationId = null;
    store(CONVERSATION_STORAGE, "");
    conversationLine.textContent = "No conversation yet.";
    delete conversationLine.dataset.id;
    for (const item of conversationList.children) {
      item.classList.remove("active");
      item.removeAttribute("aria-current");
    }
  }

  async function startConversation() {
    const response = await api("v1/conversations", { method: "POST" });
    const body = await response.json();
    clearLog();
    showConversation(body.conversation_id);
    refreshList().catch(showError);
    return conversationId;
  }

  /** Server-sent events from a streamed body, one callback per event, in order. */
  async function readEvents(response, onEvent) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      // A lone \r at the end may be the first half of \r\n: left for the next chunk.
      buffer = (buffer + value).replace(/\r\n|\r(?!$)/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        dispatch(buffer.slice(0, end), onEvent);
        buffer = buffer.slice(end + 2);
      }
    }
    if (buffer.trim()) dispatch(buffer, onEvent);
  }

  function dispatch(block, onEvent) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
    }
    if (data.length) onEvent(name, JSON.parse(data.join("\n")));
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function sourceTitle(source) {
    if (source.title) return source.title;
    if (source.url) return source.url;
    return source.type === "web" ? "Web result" : "Document";
  }

  /** Where in its document a source is: the headings it sits under, its PDF page. */
  function pageOf(source) {
    const page = source.page !== undefined && source.page !== null ? `page ${source.page}` : "";
    return [source.section || "", page].filter(Boolean).join(" · ");
  }

  /** The longest text known for a source: the citation's passage or the source snippet. */
  function chunkOf(source) {
    return source.chunk && source.chunk.length > (source.snippet || "").length
      ? source.chunk
      : source.snippet || "";
  }

  /** Lower case, single spaces, no closing punctuation: "is the rewrite the question?" */
  function normalized(text) {
    return String(text || "").toLowerCase().replace(/\s+/g, " ").replace(/[\s?.!]+$/, "").trim();
  }

  // ---- The conversation list -------------------------------------------------------

  async function refreshList(more = false) {
    if (!keyInput.value.trim()) {
      conversationList.replaceChildren();
      moreButton.hidden = true;
      return;
    }
    const cursor = more && nextCursor ? `&cursor=${encodeURIComponent(nextCursor)}` : "";
    const response = await api(`v1/conversations?limit=50${cursor}`);
    const body = await response.json();
    // An item being renamed is kept as it is, so a refresh does not drop the user's edit.
    const editing = new Map(
      [...conversationList.querySelectorAll("li.conversation-item")]
        .filter((item) => item.querySelector(".rename-form"))
        .map((item) => [item.dataset.id, item]),
    );
    const items = (body.conversations || []).map((c) => editing.get(c.id) || listItem(c));
    if (more) conversationList.append(...items);
    else conversationList.replaceChildren(...items);
    nextCursor = body.next_cursor || null;
    moreButton.hidden = !nextCursor;
    if (conversationId) {
      const current = [...conversationList.children].find((i) => i.dataset.id === conversationId);
      if (current) showConversation(conversationId, current.dataset.title);
    }
  }

  function listItem(summary) {
    const item = element("li", "conversation-item");
    item.dataset.id = summary.id;
    const select = element("button", "conversation-title");
    select.type = "button";
    select.dir = "auto";
    // The text in a span of its own: it wraps to two lines, cut with an ellipsis at the
    // end (a line clamp, which a button's own box does not take).
    select.append(element("span", "conversation-title-text"));
    // Symbols, not words: in a 17rem sidebar two worded buttons left the title "What is …".
    const rename = element("button", "rename secondary small", "✎");
    rename.type = "button";
    rename.title = "Rename";
    const remove = element("button", "delete secondary small", "✕");
    remove.type = "button";
    remove.title = "Delete";
    item.append(select, rename, remove);
    if (summary.title) provisionalTitles.delete(summary.id);
    const shown = summary.title || provisionalTitles.get(summary.id);
    if (!shown) item.dataset.untitled = "true";
    setItemTitle(item, shown || "Untitled conversation", summary.turn_count);
    if (summary.id === conversationId) {
      item.classList.add("active");
      item.setAttribute("aria-current", "true");
    }
    return item;
  }

  function setItemTitle(item, title, turnCount) {
    item.dataset.title = title;
    item.dataset.turnCount = String(turnCount);
    const select = item.querySelector(".conversation-title");
    select.firstElementChild.textContent = title;
    select.title = `${title} (${turnCount} turn${turnCount === 1 ? "" : "s"})`;
    item.querySelector(".rename").setAttribute("aria-label", `Rename ${title}`);
    item.querySelector(".delete").setAttribute("aria-label", `Delete ${title}`);
  }

  /** A conversation's default title, as the server makes it from the first question: one
   * line, cut at a word to at most 80 characters, with an ellipsis when cut. */
  function titleFromQuestion(text) {
    const line = text.split(/\s+/).filter(Boolean).join(" ");
    if (line.length <= 80) return line;
    let cut = line.slice(0, 79);
    const space = cut.lastIndexOf(" ");
    if (space >= 40) cut = cut.slice(0, space);
    return `${cut.replace(/[ ,;:-]+$/, "")}…`;
  }

  /** Once an untitled conversation's first question is sent, the sidebar shows it as the
   * title until the server's own title comes with the list. */
  function showProvisionalTitle(id, text) {
    const item = [...conversationList.children].find((i) => i.dataset.id === id);
    if ((item && !item.dataset.untitled) || provisionalTitles.has(id)) return;
    const title = titleFromQuestion(text);
    provisionalTitles.set(id, title);
    if (item) {
      delete item.dataset.untitled;
      setItemTitle(item, title, Number(item.dataset.turnCount || 0));
    }
    if (id === conversationId) conversationLine.textContent = title;
  }

  /** Open a conversation; `reopening` (after a reload) forgets a deleted one quietly. */
  async function selectConversation(id, reopening = false) {
    if (busy) return;
    clearStatus();
    setBusy(true);
    try {
      // The export holds each turn with what its markers cite (the plain read does not).
      const response = await api(`v1/conversations/${encodeURIComponent(id)}/export`);
      const body = await response.json();
      clearLog();
      showConversation(id, body.conversation && body.conversation.title);
      for (const stored of body.turns || []) Turn.stored(stored);
    } catch (error) {
      if (reopening) store(CONVERSATION_STORAGE, "");
      else if (isGone(error)) conversationGone(id);
      else showError(error);
    } finally {
      setBusy(false);
    }
  }

  /** Rename in place: Enter (or leaving the box) saves, Escape cancels; ✎ again goes
   * back to the box; an empty title is refused with a line saying so (leaving the box
   * with it empty keeps the old title). */
  function startRename(item) {
    const open = item.querySelector(".rename-input");
    if (open) {
      open.focus();
      return;
    }
    const titleButton = item.querySelector(".conversation-title");
    const renameButton = item.querySelector(".rename");
    const renameForm = element("form", "rename-form");
    const input = element("input", "rename-input");
    const old = item.dataset.title || "";
    input.value = old;
    input.dir = "auto";
    input.maxLength = 200;
    input.setAttribute("aria-label", "New title");
    renameForm.append(input);
    titleButton.hidden = true;
    item.prepend(renameForm);
    input.focus();
    input.select();
    let closed = false;
    const close = (refocus) => {
      if (closed) return;
      closed = true;
      if (statusLine.dataset.kind === "title") clearStatus();
      renameForm.remove();
      titleButton.hidden = false;
      if (refocus) titleButton.focus();
    };
    const save = async (refocus) => {
      const title = input.value.trim();
      if (title === old.trim()) {
        close(refocus);
        return;
      }
      closed = true;
      try {
        await api(`v1/conversations/${encodeURIComponent(item.dataset.id)}`, {
          method: "PATCH",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ title }),
        });
        closed = false;
        close(false);
        if (statusLine.dataset.kind === "title") clearStatus();
        await refreshList();
        if (refocus) focusItem(item.dataset.id, ".conversation-title");
      } catch (error) {
        closed = false;
        close(refocus);
        if (isGone(error)) conversationGone(item.dataset.id);
        else showError(error);
      }
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.stopPropagation();
        close(true);
      }
    });
    input.addEventListener("input", () => input.removeAttribute("aria-invalid"));
    input.addEventListener("blur", (event) => {
      // ✎ again goes back to the box; a switch to another window changes nothing.
      if (closed || event.relatedTarget === renameButton || !document.hasFocus()) return;
      if (!input.value.trim()) close(false);
      else save(false);
    });
    renameForm.addEventListener("submit", (event) => {
      event.preventDefault();
      if (closed) return;
      if (!input.value.trim()) {
        input.setAttribute("aria-invalid", "true");
        showStatus("A title cannot be empty: type one, or press Escape to keep the old one.");
        statusLine.dataset.kind = "title";
        return;
      }
      clearStatus();
      save(true);
    });
  }

  /** Focus `selector` in the conversation item `id`, if it is listed. */
  function focusItem(id, selector) {
    const item = [...conversationList.children].find((i) => i.dataset.id === id);
    const target = item && item.querySelector(selector);
    if (target) target.focus();
    return Boolean(target);
  }

  async function deleteConversation(item) {
    if (!window.confirm(`Delete the conversation "${item.dataset.title}"? This cannot be undone.`)) {
      return;
    }
    // Focus goes to the conversation listed after it (else before it, else "New
    // conversation"), never to the page's body.
    const items = [...conversationList.children];
    const at = items.indexOf(item);
    const neighbour = items[at + 1] || items[at - 1];
    const next = neighbour ? neighbour.dataset.id : null;
    try {
      await api(`v1/conversations/${encodeURIComponent(item.dataset.id)}`, { method: "DELETE" });
      if (item.dataset.id === conversationId) {
        forgetConversation();
        clearLog();
      }
      await refreshList();
    } catch (error) {
      if (isGone(error)) conversationGone(item.dataset.id);
      else showError(error);
    }
    if (!item.isConnected && !(next && focusItem(next, ".conversation-title"))) newButton.focus();
  }

  // ---- The document list -------------------------------------------------------------

  function showDocumentsStatus(message, kind) {
    documentsStatus.textContent = message;
    documentsStatus.dataset.kind = kind;
    documentsStatus.hidden = false;
  }

  function clearDocumentsStatus() {
    documentsStatus.textContent = "";
    documentsStatus.hidden = true;
    delete documentsStatus.dataset.kind;
  }

  /** The workspace's documents, oldest first, 50 at a time ("Load more" adds the next
   * 50; the cursor comes in the X-Next-Cursor header). */
  async function refreshDocuments(more = false) {
    if (!keyInput.value.trim()) {
      documentList.replaceChildren();
      moreDocuments.hidden = true;
      return;
    }
    const cursor = more && documentsCursor ? `&cursor=${encodeURIComponent(documentsCursor)}` : "";
    const response = await api(`v1/documents?limit=50${cursor}`);
    const items = (await response.json()).map(documentItem);
    if (more) documentList.append(...items);
    else documentList.replaceChildren(...items);
    documentsCursor = response.headers.get("X-Next-Cursor");
    moreDocuments.hidden = !documentsCursor;
  }

  /** A document's name: its title, else its file name (an upload's source is
   * "upload:NAME", an ingested file's its path). */
  function documentName(doc) {
    if (doc.title) return doc.title;
    const name = String(doc.source || "").replace(/^upload:/, "").split(/[\\/]/).pop();
    return name || "Untitled document";
  }

  /** About how long `seconds` is, as a person would say it: "40 s", "3 min", "2 h 5 min". */
  function roughDuration(seconds) {
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return `${s} s`;
    const minutes = Math.round(s / 60);
    if (minutes < 60) return `${minutes} min`;
    const rest = minutes % 60;
    return `${Math.floor(minutes / 60)} h${rest ? ` ${rest} min` : ""}`;
  }

  /** A processing document's progress: "N of M chunks, about T left" once its chunks are
   * counted and its ingest's rate known (`eta_s`), else the chunks embedded so far. */
  function ingestProgress(doc) {
    if (!doc.chunks_total) return `${doc.n_chunks} chunks embedded`;
    const left = doc.eta_s == null ? "" : `, about ${roughDuration(doc.eta_s)} left`;
    return `${doc.n_chunks} of ${doc.chunks_total} chunks${left}`;
  }

  function documentState(doc) {
    switch (doc.status) {
      case "processing":
        return `processing: ${ingestProgress(doc)}`;
      case "ready":
        return `ready, ${doc.n_chunks} chunk${doc.n_chunks === 1 ? "" : "s"}`;
      case "failed":
        return `failed: ${doc.error || "no reason given"}`;
      default:
        return String(doc.status);
    }
  }

  function documentItem(doc) {
    const item = element("li", "document-item");
    item.dataset.id = doc.id;
    const info = element("div", "document-info");
    const title = element("span", "document-title");
    title.dir = "auto";
    const state = element("span", "document-state");
    info.append(title, state);
    const remove = element("button", "delete-document secondary small", "✕");
    remove.type = "button";
    remove.title = "Delete";
    item.append(info, remove);
    showDocument(item, doc);
    return item;
  }

  function showDocument(item, doc) {
    const name = documentName(doc);
    item.dataset.status = doc.status;
    item.dataset.title = name;
    const title = item.querySelector(".document-title");
    title.textContent = name;
    title.title = doc.source && doc.source !== name ? `${name} (${doc.source})` : name;
    item.querySelector(".document-state").textContent = documentState(doc);
    item.querySelector(".delete-document").setAttribute("aria-label", `Delete document ${name}`);
  }

  /** Show an upload's polled state on its listed document, if it is listed. */
  function updateDocument(doc) {
    const item = [...documentList.children].find((i) => i.dataset.id === String(doc.id));
    if (item) showDocument(item, doc);
  }

  function focusDocument(id) {
    const item = id && [...documentList.children].find((i) => i.dataset.id === id);
    const target = item && item.querySelector(".delete-document");
    if (target) target.focus();
    return Boolean(target);
  }

  /** Delete a document (confirmed). The server refuses one still processing (409: its
   * ingest would store it again), and one deleted elsewhere is a 404: both are said
   * under the list, which is then reloaded either way. */
  async function deleteDocument(item) {
    const name = item.dataset.title || "this document";
    const sure = window.confirm(
      `Delete the document "${name}" from the workspace? Answers will no longer use it. This cannot be undone.`,
    );
    if (!sure) return;
    clearDocumentsStatus();
    const id = item.dataset.id;
    const items = [...documentList.children];
    const at = items.indexOf(item);
    const neighbour = items[at + 1] || items[at - 1];
    try {
      await api(`v1/documents/${encodeURIComponent(id)}`, { method: "DELETE" });
      showDocumentsStatus(`Deleted "${name}".`, "done");
    } catch (error) {
      if (error instanceof ApiError && error.status === 409) {
        showDocumentsStatus(`"${name}" cannot be deleted yet (409): ${error.detail}.`, "error");
      } else if (isGone(error)) {
        showDocumentsStatus(
          `"${name}" no longer exists (404): it was deleted, perhaps in another tab.`,
          "error",
        );
      } else {
        showDocumentsStatus(`"${name}" was not deleted: ${describe(error)}`, "error");
      }
    }
    try {
      await refreshDocuments();
    } catch (error) {
      showDocumentsStatus(`The document list could not be reloaded: ${describe(error)}`, "error");
    }
    // The focus stays on the list: on the same document if it is still there, else on
    // its neighbour, else on the list's heading (never on the page's body).
    if (!focusDocument(id) && !focusDocument(neighbour && neighbour.dataset.id)) {
      documentsHeading.focus();
    }
  }

  // ---- What the answer quoted: marked in a source's passage ---------------------------
  //
  // The server says where each [n] sits in the answer, not where its words are in the
  // passage, so the page finds them there itself. The text an [n] closes (from the
  // marker before it, or its paragraph's or list item's start) is looked for in the
  // passage, folded the same way on both sides (folded()); when the whole of it is not
  // there, its last sentences alone are, longest first. A no-LLM answer quotes its
  // sentences word for word, so they are found; an LLM's paraphrase is not, and then
  // nothing is marked rather than something it did not say.

  /** The fewest characters and words of a quote worth marking: a shorter one ("Yes")
   * would mark wherever the words happen to appear. */
  const QUOTE_MIN_CHARS = 12;
  const QUOTE_MIN_WORDS = 3;
  /** A document's text longer than this is shown unmarked (folding it costs memory). */
  const MARK_TEXT_LIMIT = 2_000_000;
  const MARKER = /\[(\d+)\]/g;
  const STRAIGHT_QUOTES = { "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"' };
  const SENTENCE_END = /(?<=[.!?…]["'\u2019\u201d)*_]*)\s+/;
  /** The start of a folded text up to the end of its last whole sentence. */
  const WHOLE_SENTENCES = /^.*[.!?…]["'\u2019\u201d)\]]*(?=\s|$)/;

  /** Text folded for matching: lower case, curly quotes straight, Markdown's * _ ` and \
   * left out (the panel shows a passage's Markdown as typed, the answer renders it), and
   * each run of spaces, line breaks and ";" one space (a no-LLM answer quotes a record's
   * lines joined with "; "). `at[k]` is the index in `text` of the folded text's k-th
   * character. */
  function folded(text) {
    let out = "";
    const at = [];
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c === "*" || c === "_" || c === "`" || c === "\\") continue;
      if (c === ";" || /\s/.test(c)) {
        if (out && !out.endsWith(" ")) {
          out += " ";
          at.push(i);
        }
        continue;
      }
      const lower = STRAIGHT_QUOTES[c] || c.toLowerCase();
      for (let k = 0; k < lower.length; k++) at.push(i);
      out += lower;
    }
    return { text: out, at };
  }

  /** The raw text before each [n] of the answer: from the marker before it, or from its
   * paragraph's, list item's or heading's start (leading punctuation left out: "A [1].
   * B [2]" gives [2] "B"). Markers side by side ("[1][2]", "[1], [2]") share one text. */
  function quotedBy(answer, n) {
    const quotes = [];
    const blocks = [];
    let block = [];
    const end = () => {
      if (block.length) blocks.push(block.join("\n"));
      block = [];
    };
    for (const line of String(answer || "").replace(/\r\n?/g, "\n").split("\n")) {
      const item = LIST_ITEM.exec(line);
      const heading = item ? null : HEADING.exec(line);
      if (!line.trim() || FENCE.test(line)) end();
      else if (item || heading) {
        end();
        block.push(item ? item[3] : heading[1]);
      } else block.push(line);
    }
    end();
    for (const text of blocks) {
      let from = 0;
      let previous = "";
      for (const marker of text.matchAll(MARKER)) {
        let quote = text.slice(from, marker.index).replace(/^[\s.,;:!?)\]]+/, "").trim();
        if (!quote) quote = previous;
        if (quote && Number(marker[1]) === n) quotes.push(quote);
        previous = quote;
        from = marker.index + marker[0].length;
      }
    }
    return quotes;
  }

  /** Whether a folded quote is long enough to mark. */
  function markable(quote) {
    return quote.length >= QUOTE_MIN_CHARS && quote.split(" ").length >= QUOTE_MIN_WORDS;
  }

  const WORD_CHARACTER = /[\p{L}\p{N}]/u;

  /** Whether `text` has whole words at [at, at + length): no word goes on either side. */
  function wholeWords(text, at, length) {
    const before = text[at - 1] || " ";
    const after = text[at + length] || " ";
    const first = text[at];
    const last = text[at + length - 1];
    return (
      !(WORD_CHARACTER.test(before) && WORD_CHARACTER.test(first)) &&
      !(WORD_CHARACTER.test(after) && WORD_CHARACTER.test(last))
    );
  }

  /** The ranges ([start, end) of `text`) that the quotes repeat, merged and in order:
   * each quote whole, else its last sentences alone (longest first), wherever they
   * occur; a quote that runs past the end of a passage cut short ("…") is marked up to
   * the end of its last whole sentence before the cut. */
  function quoteRanges(text, quotes) {
    if (!quotes.length || !text || text.length > MARK_TEXT_LIMIT) return [];
    const passage = folded(text);
    const cut = /…\s*$/.test(text) ? passage.text.replace(/\s*…\s*$/, "") : null;
    const ranges = [];
    const add = (start, length) => {
      ranges.push([passage.at[start], passage.at[start + length - 1] + 1]);
    };
    for (const quote of quotes) {
      const parts = quote.split(SENTENCE_END);
      const tries = parts
        .map((_, k) => folded(parts.slice(k).join(" ")).text.trim())
        .filter(markable);
      let found = false;
      for (const q of tries) {
        let at = passage.text.indexOf(q);
        for (; at >= 0; at = passage.text.indexOf(q, at + 1)) {
          if (!wholeWords(passage.text, at, q.length)) continue;
          add(at, q.length);
          found = true;
          at += q.length - 1;
        }
        if (found) break;
      }
      if (found || cut === null) continue;
      // Cut short: the longest end of the passage that starts the quote, at a word, up
      // to the last sentence it holds whole (a sentence cut short is not marked).
      for (const q of tries) {
        const last = cut.length - QUOTE_MIN_CHARS;
        for (let at = Math.max(0, cut.length - q.length); at <= last && !found; at++) {
          const tail = cut.slice(at);
          if (wholeWords(cut, at, 1) && markable(tail) && q.startsWith(tail)) {
            const whole = WHOLE_SENTENCES.exec(tail);
            if (whole && markable(whole[0])) add(at, whole[0].length);
            found = true;
          }
        }
        if (found) break;
      }
    }
    ranges.sort((a, b) => a[0] - b[0]);
    const merged = [];
    for (const range of ranges) {
      const last = merged[merged.length - 1];
      if (last && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
      else merged.push([...range]);
    }
    return merged;
  }

  /** Show `text` in `node`, each range inside a <mark class="quoted"> (text nodes only). */
  function showMarked(node, text, ranges) {
    const parts = [];
    let from = 0;
    for (const [start, end] of ranges) {
      if (start > from) parts.push(document.createTextNode(text.slice(from, start)));
      parts.push(element("mark", "quoted", text.slice(start, end)));
      from = end;
    }
    if (from < text.length) parts.push(document.createTextNode(text.slice(from)));
    node.replaceChildren(...parts);
  }

  /** At most `limit` characters of `text`: its start, or, when the first marked range
   * ends past the limit, a window from shortly before that range ("…" where cut); the
   * ranges moved with it. */
  function excerpt(text, ranges, limit) {
    if (text.length <= limit) return { text, ranges };
    let start = 0;
    if (ranges.length && ranges[0][1] > limit) {
      start = Math.max(0, Math.min(ranges[0][0] - 40, text.length - limit));
      const space = text.slice(start, ranges[0][0]).search(/\s/);
      if (start > 0 && space >= 0) start += space + 1;
    }
    const end = Math.min(text.length, start + limit);
    const head = start > 0 ? "…" : "";
    const shift = head.length - start;
    return {
      text: `${head}${text.slice(start, end)}${end < text.length ? "…" : ""}`,
      ranges: ranges
        .filter(([a, b]) => b > start && a < end)
        .map(([a, b]) => [Math.max(a, start) + shift, Math.min(b, end) + shift]),
    };
  }

  // ---- The [n] preview and the sources panel ---------------------------------------

  /** The [n] marker (or, with `selector`, another opener of a turn's source, such as a
   * source listed under the answer) that `node` is in: its turn, source and number. */
  function citeTarget(node, selector = "a.cite") {
    const link = node instanceof Element ? node.closest(selector) : null;
    if (!link) return null;
    const turn = turns.get(Number(link.dataset.turn));
    const source = turn && turn.sources.get(Number(link.dataset.n));
    return source ? { link, turn, source, n: Number(link.dataset.n) } : null;
  }

  /** The tooltip of an [n]: the source's title, page and passage, the part the answer
   * quoted marked (and shown, when it is past the tooltip's 280 characters). */
  function showPreview(link, turn, source, n) {
    preview.querySelector(".preview-title").textContent = sourceTitle(source);
    const page = preview.querySelector(".preview-page");
    page.textContent = pageOf(source);
    page.hidden = !page.textContent;
    const passage = chunkOf(source);
    const shown = excerpt(passage, quoteRanges(passage, turn.quotes(n)), 280);
    showMarked(preview.querySelector(".preview-snippet"), shown.text, shown.ranges);
    preview.hidden = false;
    link.setAttribute("aria-describedby", "cite-preview");
    const at = link.getBoundingClientRect();
    const width = preview.offsetWidth;
    const left = Math.max(8, Math.min(at.left, window.innerWidth - width - 8));
    const below = at.bottom + 6 + preview.offsetHeight < window.innerHeight;
    preview.style.left = `${left}px`;
    preview.style.top = below ? `${at.bottom + 6}px` : `${Math.max(8, at.top - preview.offsetHeight - 6)}px`;
  }

  function hidePreview() {
    preview.hidden = true;
  }

  /** Close the sources panel; `refocus`: focus goes back to the [n] that opened it. */
  function closePanel(refocus = false) {
    const wasOpen = !panel.hidden;
    panel.hidden = true;
    panelBody.replaceChildren();
    documentView.hidden = true;
    documentText.textContent = "";
    delete documentText.dataset.documentId;
    const opener = panelOpener;
    panelOpener = null;
    if (refocus && wasOpen && opener && opener.isConnected) opener.focus();
  }

  /** The panel lists the turn's cited sources with their full passage, what the answer
   * quoted from each marked; n is selected and takes the focus, so a keyboard user reads
   * on from there. */
  function openPanel(turn, n, opener) {
    const items = [...turn.cited()].map((m) =>
      panelItem(turn.sources.get(m), m, m === n, turn.quotes(m)),
    );
    panelBody.replaceChildren(...items);
    panel.hidden = false;
    panelOpener = opener || null;
    const selected = panelBody.querySelector(".panel-source.selected");
    if (selected) {
      selected.tabIndex = -1;
      selected.scrollIntoView({ block: "nearest" });
      // After the click's own jump to #turn-T-source-n, which would take the focus away.
      setTimeout(() => {
        if (!panel.hidden && selected.isConnected) selected.focus({ preventScroll: true });
      }, 0);
    }
  }

  function panelItem(source, n, selected, quotes) {
    const item = element("section", selected ? "panel-source selected" : "panel-source");
    item.dataset.n = String(n);
    item.setAttribute("aria-label", `Source ${n}: ${sourceTitle(source)}`);
    const head = element("p", "panel-head-line");
    head.append(element("span", "badge", `[${n}]`), " ", element("strong", "panel-title", sourceTitle(source)));
    const page = pageOf(source);
    if (page) head.append(" ", element("span", "panel-page page", page));
    const passage = chunkOf(source);
    const chunk = element("blockquote", "panel-chunk");
    const ranges = quoteRanges(passage, quotes);
    showMarked(chunk, passage, ranges);
    chunk.dataset.quoted = String(ranges.length > 0);
    item.append(head, chunk);
    if (source.document_id) {
      const open = element("button", "load-text secondary small", "Open document text");
      open.type = "button";
      open.addEventListener("click", () => loadDocumentText(source, open, quotes));
      item.append(open);
    } else if (source.url) {
      try {
        const url = new URL(source.url);
        if (url.protocol === "http:" || url.protocol === "https:") {
          const link = element("a", "panel-link", "Open the web page");
          link.href = url.href;
          link.rel = "noopener noreferrer";
          link.target = "_blank";
          item.append(link);
        }
      } catch {
        // Not a URL: nothing to open.
      }
    }
    return item;
  }

  /** The document's text, fetched with the key (a plain link could not send it), with
   * what the answer quoted from it marked, scrolled to the passage. */
  async function loadDocumentText(source, button, quotes) {
    button.disabled = true;
    try {
      const response = await api(`v1/documents/${encodeURIComponent(source.document_id)}/text`);
      const text = await response.text();
      documentTitle.textContent = sourceTitle(source);
      const ranges = quoteRanges(text, quotes);
      showMarked(documentText, text, ranges);
      documentText.dataset.documentId = source.document_id;
      documentView.hidden = false;
      const at = text.indexOf(source.snippet ? source.snippet.slice(0, 60) : "\u0000");
      documentText.scrollTop = 0;
      // The quote in this passage (the same words may be elsewhere too), else the first.
      const quoted = ranges.findIndex(([start]) => start >= at);
      const mark = documentText.querySelectorAll("mark")[Math.max(0, quoted)];
      if (mark) {
        const top = mark.getBoundingClientRect().top - documentText.getBoundingClientRect().top;
        documentText.scrollTop = top - 40;
      } else if (at > 0) {
        // Roughly where the passage is: the share of the text before it.
        documentText.scrollTop = (documentText.scrollHeight * at) / text.length - 40;
      }
      documentView.scrollIntoView({ block: "nearest" });
    } catch (error) {
      showError(error);
    } finally {
      button.disabled = false;
    }
  }

  // ---- Markdown in answers ------------------------------------------------------------
  //
  // LLMs answer in Markdown. A small subset is rendered, by building elements from the
  // text (never by parsing HTML), so that markup in an answer (an <img onerror>, a
  // <script>) stays text: paragraphs, line breaks, # headings (as a bold line),
  // **bold**, *em*, `code`, fenced code blocks, -, * or + and 1. lists (nested by
  // indentation), and [text](url) links to http and https URLs only (opened in a new tab,
  // without a referrer): any other link (javascript:, data:, a relative path) and every
  // image stay text.

  const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
  const LIST_ITEM = /^( *)([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
  const HEADING = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
  const CODE_RUN = /`+/y;
  const CITATION = /\[(\d+)\]/y;
  /** [text](url): the URL without spaces, with at most one level of parentheses. */
  const LINK = /\[([^\[\]\n]+)\]\(((?:[^()\s]|\([^()\s]*\))+)\)/y;
  const ESCAPABLE = "\\`*_[]#+-.!()~";

  /** The answer's blocks as nodes; `cite(n)` gives the link for a resolvable [n], else
   * null (the marker then stays text). */
  function markdownBlocks(text, cite) {
    const blocks = [];
    /** Open lists, outermost first: { node, indent, ordered, item }. */
    let lists = [];
    /** The open paragraph: its lines, and where it goes (null: a top-level <p>). */
    let paragraph = null;
    let fence = null;
    let afterBlank = false;

    const flush = () => {
      if (!paragraph) return;
      const nodes = inlineNodes(paragraph.lines.join("\n"), cite);
      if (paragraph.item) {
        // A second paragraph in a list item goes on a new line of it.
        if (paragraph.item.childNodes.length) paragraph.item.append(element("br"));
        paragraph.item.append(...nodes);
      } else {
        const p = element("p");
        p.append(...nodes);
        blocks.push(p);
      }
      paragraph = null;
    };
    const closeLists = () => {
      lists = [];
    };
    const addItem = (indent, marker, rest) => {
      const ordered = /\d/.test(marker);
      while (lists.length && indent < lists[lists.length - 1].indent) lists.pop();
      let open = lists[lists.length - 1];
      const nested = open && indent >= open.indent + 2;
      if (!open || nested || open.ordered !== ordered) {
        if (open && !nested) lists.pop(); // another kind of list at the same level
        const parent = lists[lists.length - 1];
        const node = element(ordered ? "ol" : "ul");
        const start = parseInt(marker, 10);
        if (ordered && start !== 1) node.start = start;
        if (parent) parent.item.append(node);
        else blocks.push(node);
        open = { node, indent, ordered, item: null };
        lists.push(open);
      }
      open.item = element("li");
      open.node.append(open.item);
      paragraph = { lines: [rest], item: open.item };
    };

    for (const line of text.replace(/\r\n?/g, "\n").split("\n")) {
      if (fence) {
        const close = FENCE.exec(line);
        const marker = close && close[1];
        if (marker && marker[0] === fence.marker[0] && marker.length >= fence.marker.length && !close[2].trim()) {
          fence = null;
        } else {
          fence.lines.push(line);
          fence.code.textContent = fence.lines.join("\n");
        }
        continue;
      }
      const opening = FENCE.exec(line);
      if (opening && !(opening[1][0] === "`" && opening[2].includes("`"))) {
        flush();
        closeLists();
        const pre = element("pre", "md-code");
        const code = element("code");
        const language = opening[2].trim().split(/\s+/)[0];
        if (language) code.dataset.language = language;
        pre.append(code);
        blocks.push(pre);
        // An unclosed fence (the answer is still streaming) runs to the end.
        fence = { marker: opening[1], lines: [], code };
        afterBlank = false;
        continue;
      }
      if (!line.trim()) {
        flush();
        afterBlank = true;
        continue;
      }
      const item = LIST_ITEM.exec(line);
      if (item) {
        flush();
        addItem(item[1].length, item[2], item[3]);
        afterBlank = false;
        continue;
      }
      const heading = HEADING.exec(line);
      if (heading) {
        flush();
        closeLists();
        const p = element("p", "md-heading");
        const strong = element("strong");
        strong.append(...inlineNodes(heading[1], cite));
        p.append(strong);
        blocks.push(p);
        afterBlank = false;
        continue;
      }
      const indented = /^ {2,}/.test(line);
      if (lists.length && (!afterBlank || indented)) {
        // Goes on with the last list item (indented, or with no blank line before it).
        const last = lists[lists.length - 1].item;
        if (paragraph && paragraph.item === last) paragraph.lines.push(line.trim());
        else {
          flush();
          paragraph = { lines: [line.trim()], item: last };
        }
      } else {
        if (lists.length) {
          flush();
          closeLists();
        }
        if (paragraph) paragraph.lines.push(line.trim());
        else paragraph = { lines: [line.trim()], item: null };
      }
      afterBlank = false;
    }
    flush();
    return blocks;
  }

  /** The end of a code span opened by `width` backticks from `from`: the index of a run
   * of exactly as many, or -1. */
  function codeSpanEnd(text, from, width) {
    let at = from;
    for (;;) {
      const next = text.indexOf("`", at);
      if (next < 0) return -1;
      CODE_RUN.lastIndex = next;
      const run = CODE_RUN.exec(text)[0].length;
      if (run === width) return next;
      at = next + run;
    }
  }

  /** Where emphasis opened with `delim` before `from` closes: a `delim` not preceded by
   * a space, outside code spans and escapes; -1 when it does not. */
  function emphasisEnd(text, from, delim) {
    if (from >= text.length || /\s/.test(text[from])) return -1;
    let at = from;
    while (at < text.length) {
      const c = text[at];
      if (c === "\\") {
        at += 2;
      } else if (c === "`") {
        CODE_RUN.lastIndex = at;
        const width = CODE_RUN.exec(text)[0].length;
        const end = codeSpanEnd(text, at + width, width);
        at = end < 0 ? at + width : end + width;
      } else if (c === "*") {
        const strong = text.startsWith("**", at);
        if (delim === "*" && strong) {
          // **bold** inside *em*: step over it whole.
          const end = emphasisEnd(text, at + 2, "**");
          at = end < 0 ? at + 2 : end + 2;
        } else if ((delim === "*" || strong) && at > from && !/\s/.test(text[at - 1])) {
          // ***both***: the bold closes on the run's last two, the em inside on its first.
          return delim === "**" && text[at + 2] === "*" ? at + 1 : at;
        } else {
          at += strong ? 2 : 1;
        }
      } else {
        at += 1;
      }
    }
    return -1;
  }

  /** The link an answer's [text](url) makes, or null (it then stays text): only to an
   * absolute http or https URL. */
  function markdownLink(url, label) {
    let parsed;
    try {
      parsed = new URL(url);
    } catch {
      return null;
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return null;
    const link = element("a", "md-link");
    link.href = parsed.href;
    link.rel = "noopener noreferrer";
    link.target = "_blank";
    // No [n] inside a link: a link in a link is no link.
    link.append(...inlineNodes(label, () => null));
    return link;
  }

  /** Inline Markdown as nodes: `code`, **bold**, *em*, http(s) links, \-escapes and line
   * breaks; each resolvable [n] becomes `cite(n)`'s link. */
  function inlineNodes(text, cite) {
    const nodes = [];
    let plain = "";
    const flush = () => {
      if (plain) nodes.push(document.createTextNode(plain));
      plain = "";
    };
    let at = 0;
    while (at < text.length) {
      const c = text[at];
      if (c === "\\" && at + 1 < text.length && ESCAPABLE.includes(text[at + 1])) {
        plain += text[at + 1];
        at += 2;
      } else if (c === "\n") {
        flush();
        nodes.push(element("br"));
        at += 1;
      } else if (c === "`") {
        CODE_RUN.lastIndex = at;
        const width = CODE_RUN.exec(text)[0].length;
        const end = codeSpanEnd(text, at + width, width);
        if (end < 0) {
          plain += text.slice(at, at + width);
        } else {
          flush();
          let code = text.slice(at + width, end).replace(/\n/g, " ");
          if (code.length > 2 && code.startsWith(" ") && code.endsWith(" ") && code.trim()) {
            code = code.slice(1, -1);
          }
          nodes.push(element("code", "", code));
        }
        at = end < 0 ? at + width : end + width;
      } else if (c === "*") {
        const delim = text.startsWith("**", at) ? "**" : "*";
        const end = emphasisEnd(text, at + delim.length, delim);
        if (end < 0) {
          plain += delim;
          at += delim.length;
        } else {
          flush();
          const node = element(delim === "**" ? "strong" : "em");
          node.append(...inlineNodes(text.slice(at + delim.length, end), cite));
          nodes.push(node);
          at = end + delim.length;
        }
      } else {
        CITATION.lastIndex = at;
        const marker = c === "[" ? CITATION.exec(text) : null;
        const link = marker && cite(Number(marker[1]));
        LINK.lastIndex = at;
        // ![alt](url) is an image: left as text, like any link that is not http(s).
        const written = c === "[" && !link && text[at - 1] !== "!" ? LINK.exec(text) : null;
        const made = written && markdownLink(written[2], written[1]);
        if (link || made) {
          flush();
          nodes.push(link || made);
          at += (link ? marker : written)[0].length;
        } else {
          plain += c;
          at += 1;
        }
      }
    }
    flush();
    return nodes;
  }

  // ---- A turn -----------------------------------------------------------------------

  /** Whether the page is scrolled to (about) its end: streamed text then keeps it there. */
  function atBottom() {
    const page = document.scrollingElement || document.documentElement;
    return page.scrollHeight - page.clientHeight - page.scrollTop < 48;
  }

  function scrollToBottom() {
    const page = document.scrollingElement || document.documentElement;
    page.scrollTop = page.scrollHeight;
  }

  /** How the server's STOPPED_TURN reason starts (a stop, or a run closed early). */
  const STOPPED_REASON = "interrupted: the run was stopped";

  /** A stored failed turn's reason, in words for the user. */
  function failedTurnMessage(error) {
    const reason = String(error || "");
    if (reason.startsWith("interrupted")) {
      return "This answer was interrupted: the service restarted before it was finished. Ask the question again.";
    }
    const why = reason ? ` (${reason})` : "";
    return `This answer failed${why}. Ask the question again.`;
  }

  /** A turn in the log: the question, then the answer as it streams, then its sources. */
  class Turn {
    constructor(text) {
      this.number = ++turnCount;
      turns.set(this.number, this);
      this.question = text;
      this.text = "";
      this.tokens = 0;
      this.sources = new Map();
      this.finished = false;
      this.node = element("li", "turn");
      this.node.dataset.state = "streaming";
      const asked = element("div", "asked");
      const line = element("p", "question");
      const asking = element("span", "question-text", text);
      asking.dir = "auto";
      line.append(element("span", "who", "You"), asking);
      this.rewrite = element("p", "rewrite");
      this.rewrite.dir = "auto";
      this.rewrite.hidden = true;
      asked.append(line, this.rewrite);
      this.answer = element("article", "answer");
      this.answer.setAttribute("aria-busy", "true");
      this.answer.setAttribute("aria-label", `Answer ${this.number}`);
      this.meta = element("p", "meta");
      this.meta.hidden = true;
      this.body = element("div", "answer-text");
      this.body.dir = "auto";
      this.body.dataset.tokens = "0";
      this.notice = element("p", "notice");
      this.notice.hidden = true;
      this.confidence = element("p", "confidence-note");
      this.confidence.hidden = true;
      this.repetition = element("p", "repetition-note");
      this.repetition.hidden = true;
      this.fallback = element("p", "fallback-note");
      this.fallback.hidden = true;
      this.stoppedNote = element("p", "stopped-note");
      this.stoppedNote.hidden = true;
      this.list = element("ol", "sources");
      this.list.setAttribute("aria-label", "Sources");
      this.list.hidden = true;
      this.error = element("p", "answer-error");
      this.error.hidden = true;
      this.answer.append(
        this.meta,
        this.body,
        this.stoppedNote,
        this.notice,
        this.confidence,
        this.repetition,
        this.fallback,
        this.list,
        this.error,
      );
      this.node.append(asked, this.answer);
      log.append(this.node);
      this.body.textContent = "…";
    }

    /** A turn read back from the conversation's export. */
    static stored(data) {
      const turn = new Turn(data.question || "");
      for (const cited of data.citations || []) {
        const n = Number(String(cited.marker || "").replace(/\D/g, ""));
        if (!n) continue;
        turn.sources.set(n, {
          n,
          type: cited.source_type,
          title: cited.title,
          document_id: cited.document_id,
          page: cited.page,
          url: cited.url,
          snippet: cited.snippet || "",
        });
      }
      turn.showRewrite(data.contextualized_query);
      if (data.status === "failed") {
        // No answer was stored: say why, and offer nothing to rate.
        if (String(data.error || "").startsWith(STOPPED_REASON)) {
          turn.stop("This answer was stopped before it was finished; ask again for a whole one.");
        } else turn.fail(failedTurnMessage(data.error));
        return turn;
      }
      if (data.status === "processing") {
        turn.body.textContent = "";
        turn.meta.textContent =
          "This answer was still being written; open the conversation again to see it.";
        turn.meta.hidden = false;
        turn.finished = true;
        turn.node.dataset.state = "pending";
        turn.answer.setAttribute("aria-busy", "false");
        return turn;
      }
      turn.finish({
        turn_id: data.id,
        answer: data.answer,
        repetition_detected: data.repetition_detected,
        no_answer: Boolean(data.no_answer),
        confidence: data.confidence,
        flags: data.flags || {},
      });
      if (data.feedback) turn.showRating(data.feedback.rating, data.feedback.comment);
      return turn;
    }

    sourceId(n) {
      return `turn-${this.number}-source-${n}`;
    }

    showRewrite(query) {
      if (query && normalized(query) !== normalized(this.question)) {
        this.rewrite.textContent = `searched for: ${query}`;
        this.rewrite.hidden = false;
      }
    }

    on(name, data) {
      switch (name) {
        case "rewrite":
          this.showRewrite(data.query);
          break;
        case "sources":
          for (const source of data.sources || []) this.sources.set(Number(source.n), source);
          break;
        case "token": {
          const follow = atBottom();
          this.text += data.text || "";
          this.tokens += 1;
          this.body.dataset.tokens = String(this.tokens);
          this.render();
          if (follow) scrollToBottom();
          break;
        }
        case "citation":
          if (data.source) this.sources.set(Number(data.source.n), data.source);
          this.render();
          break;
        case "repetition":
          this.meta.textContent = "Rewriting the answer to avoid repeating an earlier one…";
          this.meta.hidden = false;
          this.text = "";
          this.render();
          break;
        case "reset":
          // The server starts the answer again: what was shown so far is discarded.
          this.text = "";
          this.render();
          break;
        case "done":
          this.finish(data);
          break;
        case "error":
          // Stopped here or in another tab: no failure to report.
          if (data.code === "stopped") this.stop();
          else {
            this.fail(describe(new TurnError(data.code || "turn_failed", data.message || "")));
            showStatus(this.error.textContent);
          }
          break;
        default:
          break;
      }
    }

    /** The source numbers the answer's [n] markers resolve to, in order. */
    cited() {
      const found = new Set();
      for (const match of this.text.matchAll(/\[(\d+)\]/g)) {
        if (this.sources.has(Number(match[1]))) found.add(Number(match[1]));
      }
      return [...found].sort((a, b) => a - b);
    }

    /** The text the answer quoted from source n: what comes before each of its [n]. */
    quotes(n) {
      return quotedBy(this.text, n);
    }

    /** The answer's Markdown, with each resolvable [n] as a link to source n, and the
     * cited sources listed under it. */
    render() {
      const cite = (n) => {
        const source = this.sources.get(n);
        if (!source) return null;
        const link = element("a", "cite", `[${n}]`);
        link.href = `#${this.sourceId(n)}`;
        link.dataset.n = String(n);
        link.dataset.turn = String(this.number);
        link.setAttribute("aria-label", `source ${n}: ${sourceTitle(source)}`);
        return link;
      };
      this.body.replaceChildren(...markdownBlocks(this.text, cite));
      const cited = this.cited();
      this.list.replaceChildren(...cited.map((n) => this.sourceItem(n)));
      this.list.hidden = cited.length === 0;
    }

    /** A cited source under the answer: its number, title and page, on one button that
     * opens it in the sources panel. The passage itself is shown there only, once. */
    sourceItem(n) {
      const source = this.sources.get(n);
      const item = element("li", "source");
      item.id = this.sourceId(n);
      item.dataset.n = String(n);
      const open = element("button", "source-open");
      open.type = "button";
      open.dataset.n = String(n);
      open.dataset.turn = String(this.number);
      open.title = "Show its passage in the sources panel";
      open.append(element("span", "badge", `[${n}]`), " ");
      open.append(element("strong", "source-title", sourceTitle(source)));
      const page = pageOf(source);
      if (page) open.append(" ", element("span", "page", page));
      item.append(open);
      return item;
    }

    finish(data) {
      this.finished = true;
      // The stored citations may carry a longer passage than the source's snippet.
      for (const c of data.citations || []) {
        const source = this.sources.get(Number(String(c.marker || "").replace(/\D/g, "")));
        if (source && c.content_snippet) source.chunk = c.content_snippet;
      }
      this.text = data.answer || "";
      this.render();
      this.meta.hidden = true;
      if (data.no_answer) {
        this.answer.classList.add("no-answer");
        this.notice.textContent = "Not found in the workspace's documents.";
        this.notice.hidden = false;
      }
      if (data.confidence === "low") {
        this.confidence.textContent = data.no_answer
          ? "Low confidence: the documents came close to answering; try naming what you need."
          : "Low confidence: the documents only just support this answer; check its sources.";
        this.confidence.hidden = false;
      }
      const flags = data.flags || {};
      if (flags.repetition_unresolved) {
        this.repetition.textContent =
          "Could not avoid repeating information from an earlier answer.";
        this.repetition.hidden = false;
      } else if (data.repetition_detected) {
        this.repetition.textContent = "Repeated information was replaced with new details.";
        this.repetition.hidden = false;
      }
      if (flags.extractive_fallback) {
        this.fallback.textContent = "The language model failed; this answer quotes the documents.";
        this.fallback.title = `Why: ${flags.extractive_fallback}`;
        this.fallback.hidden = false;
      }
      if (data.turn_id) {
        this.node.dataset.turnId = data.turn_id;
        this.addFeedback();
      }
      this.node.dataset.noAnswer = String(Boolean(data.no_answer));
      this.node.dataset.confidence = data.confidence || "high";
      this.node.dataset.state = "done";
      this.answer.setAttribute("aria-busy", "false");
    }

    addFeedback() {
      const box = element("div", "feedback");
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", "Rate this answer");
      this.up = element("button", "thumb-up secondary small", "▲ Good");
      this.up.setAttribute("aria-label", "Good answer");
      this.down = element("button", "thumb-down secondary small", "▼ Bad");
      this.down.setAttribute("aria-label", "Bad answer");
      for (const button of [this.up, this.down]) {
        button.type = "button";
        button.setAttribute("aria-pressed", "false");
      }
      this.comment = element("input", "feedback-comment");
      this.comment.dir = "auto";
      this.comment.placeholder = "Optional comment (Enter sends)";
      this.comment.maxLength = 2000;
      this.comment.setAttribute("aria-label", "Comment on this answer");
      this.rated = element("span", "feedback-state");
      this.rated.setAttribute("aria-live", "polite");
      this.up.addEventListener("click", () => this.rate("up"));
      this.down.addEventListener("click", () => this.rate("down"));
      this.comment.addEventListener("keydown", (event) => {
        if (event.key === "Enter") {
          event.preventDefault();
          // The API stores a comment only with a rating: never invent one.
          if (this.feedback.dataset.rating) this.rate(this.feedback.dataset.rating);
          else {
            this.rated.textContent = "Pick Good or Bad first; your comment is kept and sent with it.";
            this.rated.dataset.hint = "rating-needed";
          }
        }
      });
      box.append(this.up, this.down, this.comment, this.rated);
      this.feedback = box;
      this.answer.append(box);
    }

    async rate(rating) {
      const comment = this.comment.value.trim();
      try {
        const response = await api(`v1/messages/${encodeURIComponent(this.node.dataset.turnId)}/feedback`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(comment ? { rating, comment } : { rating }),
        });
        const stored = await response.json();
        this.showRating(stored.rating, stored.comment);
      } catch (error) {
        showError(error);
      }
    }

    showRating(rating, comment) {
      if (!this.feedback) return;
      this.feedback.dataset.rating = rating;
      this.up.setAttribute("aria-pressed", String(rating === "up"));
      this.down.setAttribute("aria-pressed", String(rating === "down"));
      if (comment) this.comment.value = comment;
      this.rated.textContent = comment ? "Rated, with your comment. Thanks!" : "Rated. Thanks!";
      delete this.rated.dataset.hint;
    }

    /** Stopped before its end: what came so far stays, marked as such (the server keeps
     * the question, as a failed turn, and not the partial answer). */
    stop(message) {
      this.finished = true;
      if (!this.text) this.body.textContent = "";
      this.meta.hidden = true;
      this.stoppedNote.textContent =
        message ||
        (this.text
          ? "Stopped. The part above is not kept: the conversation keeps the question without an answer."
          : "Stopped before any answer was written.");
      this.stoppedNote.hidden = false;
      this.node.dataset.state = "stopped";
      this.answer.setAttribute("aria-busy", "false");
    }

    fail(message) {
      this.finished = true;
      if (!this.text) this.body.textContent = "";
      this.error.textContent = message;
      this.error.hidden = false;
      this.node.dataset.state = "error";
      this.answer.setAttribute("aria-busy", "false");
    }
  }

  /** Send a question. The box is emptied only once the server takes it; on any failure
   * the question is put back (unless something new was typed meanwhile). A request the
   * server refused (401, 404, 409...) leaves no turn in the log. While the answer
   * streams, Stop ends it (stopAnswer). */
  async function ask(text) {
    clearStatus();
    setBusy(true);
    let turn = null;
    let asked = null;
    let current = null;
    try {
      if (!conversationId) await startConversation();
      asked = conversationId;
      turn = new Turn(text);
      current = { turn, conversation: asked, controller: new AbortController(), stopping: false };
      streaming = current;
      stopButton.disabled = false;
      stopButton.hidden = false;
      // The user is at the question box: the page's end, which the answer then follows.
      scrollToBottom();
      const response = await api(`v1/conversations/${encodeURIComponent(asked)}/messages`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify({ content: text }),
        signal: current.controller.signal,
      });
      if (question.value.trim() === text) question.value = "";
      showProvisionalTitle(asked, text);
      await readEvents(response, (name, data) => turn.on(name, data));
      if (!turn.finished && current.stopping) turn.stop();
      if (!turn.finished) {
        throw new Error("the answer stream ended early; the stored answer is in the conversation");
      }
      refreshList().catch(() => {});
    } catch (error) {
      if (current && current.stopping && !(error instanceof ApiError)) {
        // Stopped by the user: the aborted fetch is no failure.
        if (!turn.finished) turn.stop();
        if (question.value.trim() === text) question.value = "";
        refreshList().catch(() => {});
        return;
      }
      if (!question.value.trim()) question.value = text;
      if (turn && error instanceof ApiError) {
        turns.delete(turn.number);
        turn.node.remove();
        turn = null;
      }
      if (asked && isGone(error)) {
        conversationGone(asked);
        statusLine.textContent +=
          " Your question is still in the box: send it to start a new conversation.";
      } else {
        showError(error);
        if (turn && !turn.finished) turn.fail(describe(error));
      }
    } finally {
      if (streaming === current) streaming = null;
      stopButton.hidden = true;
      setBusy(false);
      question.focus();
    }
  }

  /** Stop the answer being streamed. The server is asked to stop it first: it stores the
   * turn as stopped and ends the stream, so the conversation takes the next message at
   * once (a dropped connection alone would leave the server answering). The fetch is
   * then aborted, in case the stream has not ended (the stop request failed, or another
   * server process is answering). */
  async function stopAnswer() {
    const current = streaming;
    if (!current || current.stopping) return;
    current.stopping = true;
    stopButton.disabled = true;
    try {
      await api(`v1/conversations/${encodeURIComponent(current.conversation)}/stop`, {
        method: "POST",
      });
    } catch {
      // Not stopped on the server: the page stops reading all the same.
    }
    current.controller.abort();
  }

  // ---- Uploads ------------------------------------------------------------------------

  /** Show an upload's state on `target`: #upload-status, or a file's line of
   * #upload-list. */
  function showUpload(target, state, message, chunks) {
    target.dataset.status = state;
    if (chunks !== undefined) target.dataset.nChunks = String(chunks);
    else delete target.dataset.nChunks;
    target.textContent = message;
    target.hidden = false;
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  /** Upload the file, then poll its document every 0.5 s until ready or failed, telling
   * `show(state, message, chunks)` each state; the document list shows it from the start
   * and is reloaded when it is done. Resolves to its last state and chunks. */
  async function upload(file, show) {
    show("uploading", `Uploading ${file.name}…`);
    try {
      const data = new FormData();
      data.append("file", file, file.name);
      const response = await api("v1/documents", { method: "POST", body: data });
      let doc = await response.json();
      const name = doc.title || file.name;
      refreshDocuments().catch(() => {});
      while (doc.status === "processing") {
        show("processing", `${name}: processing, ${ingestProgress(doc)}…`, doc.n_chunks);
        updateDocument(doc);
        await sleep(500);
        doc = await (await api(`v1/documents/${encodeURIComponent(doc.id)}`)).json();
      }
      refreshDocuments().catch((error) => {
        showDocumentsStatus(`The document list could not be reloaded: ${describe(error)}`, "error");
      });
      if (doc.status === "ready") {
        const s = doc.n_chunks === 1 ? "" : "s";
        show("ready", `${name}: ready, ${doc.n_chunks} chunk${s}.`, doc.n_chunks);
      } else {
        show("failed", `${name}: failed: ${doc.error || doc.status}`, doc.n_chunks);
      }
      return { state: doc.status === "ready" ? "ready" : "failed", chunks: doc.n_chunks };
    } catch (error) {
      show("failed", `${file.name}: ${describe(error)}`);
      return { state: "failed", chunks: 0 };
    }
  }

  /** Upload the chosen files one after another, each polled until done: the server
   * ingests one at a time, and the polls stay far under the key's rate limit. One file
   * is shown in #upload-status alone; several get a line each in #upload-list, while
   * #upload-status counts them and, at the end, sums them up. */
  async function uploadFiles(files) {
    uploadList.replaceChildren();
    uploadList.hidden = true;
    if (files.length === 1) {
      await upload(files[0], (...state) => showUpload(uploadStatus, ...state));
      return;
    }
    const items = files.map((file) => {
      const item = element("li", "upload-item");
      item.dir = "auto";
      showUpload(item, "waiting", `${file.name}: waiting…`);
      return item;
    });
    uploadList.replaceChildren(...items);
    uploadList.hidden = false;
    const results = [];
    for (const [i, file] of files.entries()) {
      showUpload(uploadStatus, "uploading", `Uploading ${files.length} files: ${i} done…`);
      results.push(await upload(file, (...state) => showUpload(items[i], ...state)));
    }
    const ready = results.filter((r) => r.state === "ready").length;
    const failed = results.length - ready;
    const chunks = results.reduce((sum, r) => sum + (r.chunks || 0), 0);
    const summary = `${results.length} files: ${ready} ready${failed ? `, ${failed} failed` : ""}.`;
    showUpload(uploadStatus, failed ? "failed" : "ready", summary, chunks);
  }

  // ---- Wiring -------------------------------------------------------------------------

  try {
    // An older page kept the key in local storage, across visits: no longer.
    localStorage.removeItem(KEY_STORAGE);
  } catch {
    // Storage switched off: nothing kept.
  }
  keyInput.value = loadKey();
  keyInput.addEventListener("input", () => {
    saveKey(keyInput.value.trim());
    if (!keyInput.value.trim()) showKeyHint();
  });
  // A conversation belongs to the workspace of the key that started it.
  keyInput.addEventListener("change", () => {
    forgetConversation();
    clearLog();
    clearDocumentsStatus();
    refreshWorkspace();
    refreshList().catch(showError);
    refreshDocuments().catch(showError);
  });

  forgetButton.addEventListener("click", () => {
    keyInput.value = "";
    saveKey("");
    showKeyHint();
    forgetConversation();
    clearLog();
    conversationList.replaceChildren();
    moreButton.hidden = true;
    documentList.replaceChildren();
    moreDocuments.hidden = true;
    clearDocumentsStatus();
    clearStatus();
    keyInput.focus();
  });

  newButton.addEventListener("click", async () => {
    clearStatus();
    setBusy(true);
    try {
      await startConversation();
      question.focus();
    } catch (error) {
      showError(error);
    } finally {
      setBusy(false);
    }
  });

  conversationList.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    const item = target && target.closest("li.conversation-item");
    if (!item) return;
    if (target.closest(".conversation-title")) selectConversation(item.dataset.id);
    else if (target.closest(".rename")) startRename(item);
    else if (target.closest(".delete")) deleteConversation(item);
  });

  moreButton.addEventListener("click", () => {
    refreshList(true).catch(showError);
  });

  documentList.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    const item = target && target.closest("li.document-item");
    if (item && target.closest(".delete-document")) deleteDocument(item);
  });

  moreDocuments.addEventListener("click", () => {
    refreshDocuments(true).catch((error) => showDocumentsStatus(describe(error), "error"));
  });

  stopButton.addEventListener("click", stopAnswer);

  // The [n] markers are re-drawn as tokens arrive, so their events are delegated.
  log.addEventListener("mouseover", (event) => {
    const cite = citeTarget(event.target);
    if (cite) showPreview(cite.link, cite.turn, cite.source, cite.n);
  });
  log.addEventListener("mouseout", (event) => {
    if (citeTarget(event.target) && !citeTarget(event.relatedTarget)) hidePreview();
  });
  log.addEventListener("focusin", (event) => {
    const cite = citeTarget(event.target);
    if (cite) showPreview(cite.link, cite.turn, cite.source, cite.n);
  });
  log.addEventListener("focusout", hidePreview);
  log.addEventListener("click", (event) => {
    const cite = citeTarget(event.target) || citeTarget(event.target, "button.source-open");
    if (cite) {
      hidePreview();
      openPanel(cite.turn, cite.n, cite.link);
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      if (!preview.hidden) hidePreview();
      else if (!panel.hidden) closePanel(true);
    }
  });
  byId("close-panel").addEventListener("click", () => closePanel(true));

  // The skip link focuses the box itself (a #question in the URL would stay there).
  byId("skip-link").addEventListener("click", (event) => {
    event.preventDefault();
    question.focus();
  });

  uploadInput.addEventListener("change", () => {
    const files = [...(uploadInput.files || [])];
    // Cleared at once (the File objects stay readable), so the same files can be chosen again.
    uploadInput.value = "";
    if (files.length) uploadFiles(files);
  });

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (send.disabled) return;
    const text = question.value.trim();
    if (!text) {
      showStatus("Type a question first.");
      return;
    }
    ask(text);
  });

  question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (!send.disabled) form.requestSubmit();
    }
  });

  // With a key: list the conversations, reopen the one open before a reload (if it
  // still exists), and be ready for a question.
  if (keyInput.value.trim()) {
    const reopen = loadConversationId();
    refreshWorkspace();
    refreshList()
      .then(() => (reopen ? selectConversation(reopen, true) : undefined))
      .catch(showError);
    refreshDocuments().catch(showError);
    question.focus();
  }
})();
