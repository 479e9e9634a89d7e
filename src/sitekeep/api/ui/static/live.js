// sitekeep live view (SPEC §10): draws the live session's frames on a canvas and sends the
// person's mouse, wheel, keyboard, text, navigation and resizes over its WebSocket.
// Frames: one decode in flight, newest wins; each drawn frame is acknowledged, so the
// server sends no faster than this page draws. Mouse moves coalesce to one per animation
// frame. Error messages are kept in a list, never replaced.
(function () {
  "use strict";

  const root = document.querySelector("[data-live]");
  if (!root) return;
  const canvas = root.querySelector("canvas");
  const ctx = canvas.getContext("2d");
  const status = root.querySelector("[data-live-status]");
  const title = root.querySelector("[data-live-title]");
  const address = root.querySelector("#live-address");
  const errors = root.querySelector("[data-live-errors]");
  const csrf = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRF-Token"];
  let ws = null;
  let frames = 0;
  let decoding = false;
  let pending = null;
  let moved = null;
  let ended = false;

  function say(text) { status.textContent = text; }

  function send(message) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
  }

  function showError(error) {
    const item = document.createElement("li");
    item.textContent = error.message + (error.field ? " (" + error.field + ")" : "");
    errors.appendChild(item);
    root.dataset.errors = String(errors.children.length);
  }

  function setSize(width, height) {
    if (canvas.width !== width) canvas.width = width; // assigning clears: only on change
    if (canvas.height !== height) canvas.height = height;
  }

  async function draw(blob) {
    if (decoding) { pending = blob; return; } // newest wins
    decoding = true;
    try {
      const bitmap = await createImageBitmap(blob);
      setSize(bitmap.width, bitmap.height);
      ctx.drawImage(bitmap, 0, 0);
      bitmap.close();
      root.dataset.frames = String(++frames);
    } catch (err) {
      // A frame that cannot be decoded is skipped; the next one replaces it.
    } finally {
      decoding = false;
      send({ type: "ack" });
      if (pending) { const next = pending; pending = null; draw(next); }
    }
  }

  function onMessage(event) {
    if (typeof event.data !== "string") { draw(event.data); return; }
    const message = JSON.parse(event.data);
    if (message.type === "ready") {
      setSize(message.width, message.height);
      say("Live · " + message.browser);
      root.dataset.state = "live";
      page(message);
    } else if (message.type === "page") {
      page(message);
    } else if (message.type === "viewport") {
      setSize(message.width, message.height);
    } else if (message.type === "error") {
      showError(message.error);
    } else if (message.type === "closed") {
      ended = true;
      say("Ended (" + message.reason + ")");
      root.dataset.state = "closed";
    }
  }

  function page(message) {
    // A URL holding a typed secret's value is withheld (url_withheld), as in every result.
    const url = message.url_withheld ? "" : message.url || "";
    title.textContent = message.title || url;
    root.dataset.url = url;
    if (document.activeElement !== address) address.value = url;
  }

  async function connect() {
    say("Connecting…");
    const reply = await fetch(root.dataset.ticketUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ csrf: csrf }),
    });
    if (!reply.ok) {
      say(reply.status === 404 ? "This live browser has ended." : "Could not connect.");
      root.dataset.state = "closed";
      return;
    }
    const ticket = (await reply.json()).ticket;
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    ws = new WebSocket(scheme + location.host + root.dataset.socket);
    ws.binaryType = "blob";
    ws.onopen = function () { ws.send(JSON.stringify({ ticket: ticket })); };
    ws.onmessage = onMessage;
    ws.onclose = function () {
      if (!ended) { say("Disconnected"); root.dataset.state = "closed"; }
    };
  }

  // -- input ----------------------------------------------------------------------------

  function point(event) {
    const box = canvas.getBoundingClientRect();
    const x = Math.floor((event.clientX - box.left) * canvas.width / box.width);
    const y = Math.floor((event.clientY - box.top) * canvas.height / box.height);
    return {
      x: Math.max(0, Math.min(canvas.width - 1, x)),
      y: Math.max(0, Math.min(canvas.height - 1, y)),
    };
  }

  canvas.addEventListener("mousedown", function (event) {
    canvas.focus();
    const p = point(event);
    send({ type: "pointer", action: "down", x: p.x, y: p.y, button: event.button });
    event.preventDefault();
  });
  canvas.addEventListener("mouseup", function (event) {
    const p = point(event);
    send({ type: "pointer", action: "up", x: p.x, y: p.y, button: event.button });
  });
  canvas.addEventListener("mousemove", function (event) {
    const first = moved === null;
    moved = point(event);
    if (!first) return;
    requestAnimationFrame(function () {
      send({ type: "pointer", action: "move", x: moved.x, y: moved.y });
      moved = null;
    });
  });
  canvas.addEventListener("wheel", function (event) {
    const p = point(event);
    const scale = event.deltaMode === 1 ? 40 : event.deltaMode === 2 ? canvas.height : 1;
    send({
      type: "wheel", x: p.x, y: p.y,
      dx: Math.round(event.deltaX * scale), dy: Math.round(event.deltaY * scale),
    });
    event.preventDefault();
  }, { passive: false });
  canvas.addEventListener("contextmenu", function (event) { event.preventDefault(); });

  // The named keys the server knows (sitekeep.browser.page.KEYS); any single character
  // stands for itself. Others (CapsLock, an IME's Process…) stay on this side.
  const NAMED = new Set([
    "Enter", "Tab", "Escape", "Backspace", "Delete", "ArrowLeft", "ArrowUp", "ArrowRight",
    "ArrowDown", "Home", "End", "PageUp", "PageDown", "Shift", "Control", "Alt", "Meta",
    "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12",
  ]);
  function sendKey(event, action) {
    if (event.isComposing || (event.key.length !== 1 && !NAMED.has(event.key))) return;
    send({ type: "key", action: action, key: event.key });
    event.preventDefault();
  }
  canvas.addEventListener("keydown", function (event) { sendKey(event, "down"); });
  canvas.addEventListener("keyup", function (event) { sendKey(event, "up"); });
  canvas.addEventListener("paste", function (event) {
    const text = event.clipboardData && event.clipboardData.getData("text");
    if (text) send({ type: "text", text: text });
    event.preventDefault();
  });

  root.querySelector("[data-live-navigate]").addEventListener("submit", function (event) {
    event.preventDefault();
    send({ type: "navigate", url: address.value });
  });
  root.querySelector("[data-live-resize]").addEventListener("click", function () {
    const width = parseInt(root.querySelector("#live-width").value, 10);
    const height = parseInt(root.querySelector("#live-height").value, 10);
    send({ type: "resize", width: width, height: height });
  });

  connect();
})();
