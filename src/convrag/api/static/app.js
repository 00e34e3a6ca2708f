// The chat page's behaviour: keep the workspace API key, start conversations, send a
// question and show its answer as the server streams it (server-sent events read from a
// fetch body, since EventSource can neither POST nor send an Authorization header), with
// each [n] in the answer linked to source n listed under it.
//
// Plain script, no build step and no third-party code: the page works offline. Every
// text from the server is set with textContent, never parsed as HTML.
"use strict";

(() => {
  const KEY_STORAGE = "convrag.apiKey";
  const byId = (id) => document.getElementById(id);
  const keyInput = byId("api-key");
  const newButton = byId("new-conversation");
  const forgetButton = byId("forget-key");
  const conversationLine = byId("conversation");
  const statusLine = byId("status");
  const log = byId("log");
  const form = byId("ask");
  const question = byId("question");
  const send = byId("send");

  let conversationId = null;
  let turnCount = 0;

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

  // Local storage can be switched off; the page then works without remembering the key.
  function loadKey() {
    try {
      return localStorage.getItem(KEY_STORAGE) || "";
    } catch {
      return "";
    }
  }

  function saveKey(value) {
    try {
      if (value) localStorage.setItem(KEY_STORAGE, value);
      else localStorage.removeItem(KEY_STORAGE);
    } catch {
      // Not stored: the key stays in the field for this visit.
    }
  }

  function showStatus(message) {
    statusLine.textContent = message;
    statusLine.hidden = false;
  }

  function clearStatus() {
    statusLine.textContent = "";
    statusLine.hidden = true;
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
          return `This conversation is still answering the previous question (409)${detail}.`;
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
    return response;
  }

  function setBusy(busy) {
    send.disabled = busy;
    newButton.disabled = busy;
    form.setAttribute("aria-busy", String(busy));
  }

  function forgetConversation() {
    conversationId = null;
    conversationLine.textContent = "No conversation yet.";
    delete conversationLine.dataset.id;
  }

  async function startConversation() {
    const response = await api("v1/conversations", { method: "POST" });
    const body = await response.json();
    conversationId = body.conversation_id;
    conversationLine.textContent = `Conversation ${conversationId}`;
    conversationLine.dataset.id = conversationId;
    log.replaceChildren();
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

  /** A turn in the log: the question, then the answer as it streams, then its sources. */
  class Turn {
    constructor(text) {
      this.number = ++turnCount;
      this.text = "";
      this.tokens = 0;
      this.sources = new Map();
      this.finished = false;
      this.node = element("li", "turn");
      this.node.dataset.state = "streaming";
      const asked = element("p", "question");
      asked.append(element("span", "who", "You"), element("span", "", text));
      this.answer = element("article", "answer");
      this.answer.setAttribute("aria-busy", "true");
      this.answer.setAttribute("aria-label", `Answer ${this.number}`);
      this.meta = element("p", "meta");
      this.meta.hidden = true;
      this.body = element("p", "answer-text");
      this.body.dataset.tokens = "0";
      this.notice = element("p", "notice");
      this.notice.hidden = true;
      this.list = element("ol", "sources");
      this.list.setAttribute("aria-label", "Sources");
      this.list.hidden = true;
      this.error = element("p", "answer-error");
      this.error.hidden = true;
      this.answer.append(this.meta, this.body, this.notice, this.list, this.error);
      this.node.append(asked, this.answer);
      log.append(this.node);
      this.body.textContent = "…";
    }

    sourceId(n) {
      return `turn-${this.number}-source-${n}`;
    }

    on(name, data) {
      switch (name) {
        case "rewrite":
          if (data.query) {
            this.meta.textContent = `Searched for: ${data.query}`;
            this.meta.hidden = false;
          }
          break;
        case "sources":
          for (const source of data.sources || []) this.sources.set(Number(source.n), source);
          break;
        case "token":
          this.text += data.text || "";
          this.tokens += 1;
          this.body.dataset.tokens = String(this.tokens);
          this.render();
          break;
        case "citation":
          if (data.source) this.sources.set(Number(data.source.n), data.source);
          this.render();
          break;
        case "repetition":
        case "reset":
          // The server starts the answer again: what was shown so far is discarded.
          this.text = "";
          this.render();
          break;
        case "done":
          this.finish(data);
          break;
        case "error":
          this.fail(describe(new TurnError(data.code || "turn_failed", data.message || "")));
          showStatus(this.error.textContent);
          break;
        default:
          break;
      }
    }

    /** The answer text with each resolvable [n] as a link to source n, and the cited
     * sources listed under it. */
    render() {
      const parts = [];
      const cited = [];
      const pattern = /\[(\d+)\]/g;
      let last = 0;
      let match;
      while ((match = pattern.exec(this.text)) !== null) {
        const n = Number(match[1]);
        const source = this.sources.get(n);
        if (!source) continue;
        parts.push(this.text.slice(last, match.index));
        const link = element("a", "cite", `[${n}]`);
        link.href = `#${this.sourceId(n)}`;
        link.title = sourceTitle(source);
        link.setAttribute("aria-label", `source ${n}: ${sourceTitle(source)}`);
        parts.push(link);
        last = pattern.lastIndex;
        if (!cited.includes(n)) cited.push(n);
      }
      parts.push(this.text.slice(last));
      this.body.replaceChildren(...parts);
      this.list.replaceChildren(...cited.sort((a, b) => a - b).map((n) => this.sourceItem(n)));
      this.list.hidden = cited.length === 0;
    }

    sourceItem(n) {
      const source = this.sources.get(n);
      const item = element("li", "source");
      item.id = this.sourceId(n);
      item.dataset.n = String(n);
      const head = element("p", "source-head");
      head.append(element("span", "badge", `[${n}]`), " ");
      let title = element("strong", "source-title", sourceTitle(source));
      if (source.url) {
        try {
          const url = new URL(source.url);
          if (url.protocol === "http:" || url.protocol === "https:") {
            title = element("a", "source-title", sourceTitle(source));
            title.href = url.href;
            title.rel = "noopener noreferrer";
            title.target = "_blank";
          }
        } catch {
          // Not a URL: shown as text.
        }
      }
      head.append(title);
      if (source.page !== undefined && source.page !== null) {
        head.append(" ", element("span", "page", `page ${source.page}`));
      }
      item.append(head);
      if (source.snippet) item.append(element("blockquote", "snippet", source.snippet));
      return item;
    }

    finish(data) {
      this.finished = true;
      this.text = data.answer || "";
      this.render();
      if (data.no_answer) {
        this.answer.classList.add("no-answer");
        this.notice.textContent = "Not found in the workspace's documents.";
        this.notice.hidden = false;
      }
      if (data.turn_id) this.node.dataset.turnId = data.turn_id;
      this.node.dataset.noAnswer = String(Boolean(data.no_answer));
      this.node.dataset.state = "done";
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

  async function ask(text) {
    clearStatus();
    setBusy(true);
    let turn = null;
    try {
      if (!conversationId) await startConversation();
      turn = new Turn(text);
      question.value = "";
      turn.node.scrollIntoView({ block: "end" });
      const response = await api(`v1/conversations/${encodeURIComponent(conversationId)}/messages`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify({ content: text }),
      });
      await readEvents(response, (name, data) => turn.on(name, data));
      if (!turn.finished) {
        throw new Error("the answer stream ended early; the stored answer is in the conversation");
      }
    } catch (error) {
      const message = describe(error);
      showStatus(message);
      if (turn && !turn.finished) turn.fail(message);
      if (error instanceof ApiError && error.status === 404) forgetConversation();
    } finally {
      setBusy(false);
      question.focus();
    }
  }

  keyInput.value = loadKey();
  keyInput.addEventListener("input", () => saveKey(keyInput.value.trim()));
  // A conversation belongs to the workspace of the key that started it.
  keyInput.addEventListener("change", forgetConversation);

  forgetButton.addEventListener("click", () => {
    keyInput.value = "";
    saveKey("");
    forgetConversation();
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
      showStatus(describe(error));
    } finally {
      setBusy(false);
    }
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
})();
