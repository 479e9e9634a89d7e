// sitekeep's opt-in Chromium BiDi engine (SITEKEEP_CHROMIUM_BIDI=mapper; see mapper.py).
//
// One process per browser: it starts Chromium with the argv sitekeep built (its own
// process group, so sitekeep's killpg ends both), talks CDP to it over
// --remote-debugging-pipe, and runs chromium-bidi's mapper in this Node process — what
// Puppeteer's BidiOverCdp does — instead of in a hidden tab driven by chromedriver.
// It serves, on 127.0.0.1:<port>:
//   ws  /session/<id>           W3C WebDriver BiDi; each socket is its own goog:channel
//                                (its subscriptions and intercepts end with it, and a
//                                request only its intercepts held is failed)
//   GET /status                  {value: {ready}}
//   GET /session/<id>/window     200 while the browser runs, else 404 invalid session id
//   DELETE /session/<id>         closes the browser, then this process exits
// Every other WebDriver classic command answers 404 unknown command.
//
// Usage: BIDI_MAPPER_CONFIG=<json> node server.mjs --port=<port>   (fd 3: listening)
//   config: {"session": id, "argv": [chromium, ...flags], "acceptInsecureCerts": bool,
//            "unhandledPromptBehavior": W3C WebDriver's capability value}
//
// Who may connect. The session id in the socket's path is the one secret: it comes in
// the environment (readable by this user only), never in argv (/proc/<pid>/cmdline is
// readable by every local user), and Chromium does not inherit it. The socket is bound
// by sitekeep before this process starts (fd 3): nobody can take the port between a
// free port being chosen and this process listening on it, and be taken for us. A
// request whose Host is not this loopback port (DNS rebinding) or that carries an Origin
// (every WebSocket a web page opens does; sitekeep's client sends none) is refused
// before anything else, as chromedriver refuses them.

import http from 'node:http';
import {spawn} from 'node:child_process';
import {WebSocketServer} from 'ws';
import {BidiServer} from 'chromium-bidi/out/Default/gen/src/bidiMapper/BidiMapper.js';
import {MapperCdpConnection} from 'chromium-bidi/out/Default/gen/src/cdp/CdpConnection.js';
import {BidiParser} from 'chromium-bidi/out/Default/gen/src/bidiTab/BidiParser.js';

// chromium-bidi fires many CDP commands without awaiting them (`void this.#continueRequest()`);
// one that fails because its target is going away (a tab closing, a request it paused) rejects
// with no handler. In chromedriver the mapper runs in a tab, where that is a console message;
// in Node (>= 15) it ended this process, and the browser with it, mid-session. Ignored here the
// same way, with one line on stderr (never the error's text: it can hold a URL).
process.on('unhandledRejection', (error) => {
  process.stderr.write(`mapper: ignored an unhandled rejection (${error?.name ?? typeof error})\n`);
});

const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const eq = a.indexOf('=');
    return [a.slice(2, eq), a.slice(eq + 1)];
  }),
);
const port = Number(args.port);
const config = JSON.parse(process.env.BIDI_MAPPER_CONFIG ?? '{}');
delete process.env.BIDI_MAPPER_CONFIG; // Chromium inherits process.env
const sessionId = config.session;
if (typeof sessionId !== 'string' || sessionId.length < 32 || !Array.isArray(config.argv)) {
  process.stderr.write('BIDI_MAPPER_CONFIG: no session or argv\n');
  process.exit(2);
}
const INTERNAL = 'sitekeep:internal';

// -- Chromium over a CDP pipe (fd 3: its input, fd 4: its output; NUL-separated JSON) --

const chrome = spawn(config.argv[0], config.argv.slice(1), {
  stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'],
});
let chromeGone = false;
chrome.on('exit', () => {
  chromeGone = true;
  shutdown();
});
chrome.on('error', () => {
  chromeGone = true;
  shutdown();
});

// The one ordering rule this transport adds (a chromium-bidi race, in 17.0.2 and 157.0.8090-0).
// chromium-bidi answers a paused request (Fetch.continueRequest, Fetch.continueWithAuth…) and
// marks it no longer paused only once the reply is in. Over a pipe the request's next pause —
// the proxy's next challenge, Fetch.authRequired — can come before that reply (wrong
// credentials: the proxy asks again), or in the same read, handled before the reply's
// continuation runs; either way the new pause was marked "not paused" at once: its
// network.authRequired went out, the answer got "no such request", and the request — and
// every later one through that proxy, which Chromium holds behind the open challenge — waited
// for ever (test_proxy's wrong-credentials test failed 1 run in 3 or 4). So a Fetch event for
// a request with an answer in flight is handed over after that answer's reply, once the
// continuations the reply resolves have run: in a setImmediate after it, not merely a later
// chunk — a stream that had buffered emits several chunks in one go, no microtask between.
const FETCH_ANSWERS = new Set(['Fetch.continueRequest', 'Fetch.continueResponse',
  'Fetch.continueWithAuth', 'Fetch.fulfillRequest', 'Fetch.failRequest']);

/** A paused request's key: its CDP session and Fetch request id. */
const pausedKey = (sessionId, params) => `${sessionId ?? ''}/${params?.requestId}`;

class PipeTransport {
  #write;
  #onMessage = () => {};
  #pending = [];
  #answers = new Map(); // CDP command id -> the paused request it answers
  #answering = new Map(); // paused request -> its answers in flight (0: reply just in)
  #held = new Map(); // paused request -> its Fetch events (JSON), in order
  constructor(write, read) {
    this.#write = write;
    read.on('data', (chunk) => this.#dispatch(chunk));
    read.on('error', () => {});
    write.on('error', () => {});
  }
  setOnMessage(handler) {
    this.#onMessage = handler;
  }
  sendMessage(message) {
    if (message.includes('"Fetch.')) this.#track(JSON.parse(message));
    this.#write.write(message + '\0');
  }
  #track({id, method, params, sessionId}) {
    if (!FETCH_ANSWERS.has(method)) return;
    const key = pausedKey(sessionId, params);
    this.#answers.set(id, key);
    this.#answering.set(key, (this.#answering.get(key) ?? 0) + 1);
  }
  #dispatch(chunk) {
    // Buffers, not strings: a UTF-8 character may be split between two chunks.
    let start = 0;
    let end = chunk.indexOf(0);
    while (end !== -1) {
      this.#pending.push(chunk.subarray(start, end));
      const message = Buffer.concat(this.#pending).toString('utf8');
      this.#pending = [];
      this.#receive(message);
      start = end + 1;
      end = chunk.indexOf(0, start);
    }
    if (start < chunk.length) this.#pending.push(chunk.subarray(start));
  }
  #receive(text) {
    if (this.#answering.size === 0 && this.#held.size === 0) return this.#onMessage(text);
    const message = JSON.parse(text);
    if (message.method?.startsWith('Fetch.')) {
      const key = pausedKey(message.sessionId, message.params);
      if (this.#answering.has(key) || this.#held.has(key)) {
        this.#held.set(key, [...(this.#held.get(key) ?? []), text]);
        return;
      }
    }
    this.#onMessage(text);
    if (message.method === 'Target.detachedFromTarget') this.#forget(message.params?.sessionId);
    const key = message.id === undefined ? undefined : this.#answers.get(message.id);
    if (key === undefined) return;
    this.#answers.delete(message.id);
    const left = this.#answering.get(key) - 1;
    this.#answering.set(key, left); // 0: settling until the reply's continuations have run
    if (left === 0) setImmediate(() => this.#settle(key));
  }
  #settle(key) {
    if (this.#answering.get(key) !== 0) return; // answered again meanwhile: after that reply
    this.#answering.delete(key);
    const held = this.#held.get(key) ?? [];
    this.#held.delete(key);
    for (const text of held) this.#receive(text);
  }
  /** A detached session's commands get no reply (chromium-bidi rejects them itself). */
  #forget(sessionId) {
    const prefix = `${sessionId ?? ''}/`;
    for (const [id, key] of this.#answers) if (key.startsWith(prefix)) this.#answers.delete(id);
    for (const key of [...this.#answering.keys()]) {
      if (key.startsWith(prefix)) this.#answering.delete(key);
    }
    for (const key of [...this.#held.keys()]) if (key.startsWith(prefix)) this.#held.delete(key);
  }
  close() {}
}

// -- BiDi sockets as goog:channels of one mapper ----------------------------------------

const sockets = new Map(); // channel -> {ws, pending: Map<id, method>, subscriptions, intercepts, held}
const BLOCKING = new Set(['network.beforeRequestSent', 'network.responseStarted', 'network.authRequired']);
const ANSWERS = new Set(['network.continueRequest', 'network.continueResponse',
  'network.continueWithAuth', 'network.failRequest', 'network.provideResponse']);
const internal = new Map(); // id -> resolve
let nextInternal = 1;
let nextChannel = 1;

const bidiTransport = {
  onMessage: () => {},
  setOnMessage(handler) {
    this.onMessage = handler;
  },
  sendMessage(message) {
    const channel = message['goog:channel'];
    if (channel === INTERNAL) {
      internal.get(message.id)?.(message);
      internal.delete(message.id);
      return;
    }
    const text = (() => {
      if (channel === undefined) return null;
      delete message['goog:channel'];
      return JSON.stringify(message);
    })();
    if (text === null) {
      const all = JSON.stringify(message); // no channel (a malformed command): everyone
      for (const s of sockets.values()) s.ws.send(all);
      return;
    }
    const socket = sockets.get(channel);
    if (socket === undefined) return;
    if (message.type === 'success' && socket.pending.has(message.id)) {
      const [method, request] = socket.pending.get(message.id);
      if (method === 'session.subscribe' && message.result?.subscription) {
        socket.subscriptions.push(message.result.subscription);
      } else if (method === 'network.addIntercept' && message.result?.intercept) {
        socket.intercepts.push(message.result.intercept);
      } else if (ANSWERS.has(method)) {
        socket.held.delete(request);
      }
    }
    if (message.type === 'event' && BLOCKING.has(message.method) && message.params?.isBlocked) {
      const request = message.params.request?.request;
      if (request !== undefined) {
        socket.held.set(request, {phase: message.method, intercepts: message.params.intercepts ?? []});
      }
    }
    if (message.id !== undefined) socket.pending.delete(message.id);
    socket.ws.send(text);
  },
  close() {},
};

function command(method, params) {
  const id = nextInternal++;
  return new Promise((resolve) => {
    internal.set(id, resolve);
    bidiTransport.onMessage({id, method, params, 'goog:channel': INTERNAL});
  });
}

const cdp = new MapperCdpConnection(new PipeTransport(chrome.stdio[3], chrome.stdio[4]));
const browserClient = await cdp.createBrowserSession();
await BidiServer.createAndStart(bidiTransport, cdp, browserClient, '', new BidiParser());
const created = await command('session.new', {
  capabilities: {alwaysMatch: {
    acceptInsecureCerts: Boolean(config.acceptInsecureCerts),
    unhandledPromptBehavior: config.unhandledPromptBehavior,
  }},
});
if (created.type !== 'success') {
  process.stderr.write(`session.new failed: ${JSON.stringify(created)}\n`);
  process.exit(1);
}
let ready = true;

// -- HTTP and WebSocket on one loopback port --------------------------------------------

function reply(res, status, value) {
  const body = JSON.stringify({value});
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

const invalidSession = {error: 'invalid session id', message: 'no such session', stacktrace: ''};

const hosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`]);

/** Whether a request may come from a web page or a rebound name (see the header). */
function foreign(req) {
  return req.headers.origin !== undefined || !hosts.has(req.headers.host ?? '');
}

const server = http.createServer((req, res) => {
  if (foreign(req)) {
    return reply(res, 403, {error: 'unknown error', message: 'Host or Origin refused',
      stacktrace: ''});
  }
  const path = (req.url ?? '/').split('?')[0].replace(/\/+$/, '');
  const ours = `/session/${sessionId}`;
  if (req.method === 'GET' && path === '/status') {
    return reply(res, 200, {ready: ready && !chromeGone, message: 'sitekeep bidi mapper'});
  }
  if (req.method === 'GET' && path.startsWith('/session/') && path.endsWith('/window')) {
    if (path === `${ours}/window` && !chromeGone) return reply(res, 200, '');
    return reply(res, 404, invalidSession);
  }
  if (req.method === 'DELETE' && path.startsWith('/session/')) {
    if (path !== ours) return reply(res, 404, invalidSession);
    reply(res, 200, null);
    closeBrowser();
    return;
  }
  return reply(res, 404, {
    error: 'unknown command',
    message: 'this endpoint speaks WebDriver BiDi only (sitekeep mapper engine)',
    stacktrace: '',
  });
});

const wss = new WebSocketServer({noServer: true, perMessageDeflate: false});
server.on('upgrade', (req, socket, head) => {
  const path = (req.url ?? '/').split('?')[0].replace(/\/+$/, '');
  if (foreign(req)) {
    socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\n\r\n');
    return;
  }
  if (path !== `/session/${sessionId}` || chromeGone) {
    socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => connected(ws));
});

function connected(ws) {
  const channel = `sitekeep:${nextChannel++}`;
  // held: requests this socket was told are blocked and has not answered yet
  const state = {ws, pending: new Map(), subscriptions: [], intercepts: [], held: new Map()};
  sockets.set(channel, state);
  ws.on('message', (data) => {
    let message;
    try {
      message = JSON.parse(data.toString('utf8'));
    } catch {
      ws.send(JSON.stringify({type: 'error', id: null, error: 'invalid argument',
        message: 'not JSON'}));
      return;
    }
    if (message === null || typeof message !== 'object' || Array.isArray(message)) {
      ws.send(JSON.stringify({type: 'error', id: null, error: 'invalid argument',
        message: 'not a JSON object'}));
      return;
    }
    const method = message.method;
    if (method === 'session.subscribe' || method === 'network.addIntercept' || ANSWERS.has(method)) {
      state.pending.set(message.id, [method, message.params?.request]);
    }
    message['goog:channel'] = channel;
    bidiTransport.onMessage(message);
  });
  ws.on('close', () => {
    sockets.delete(channel);
    // What the socket made ends with it: a blocked request nobody answers wedges a tab.
    if (state.subscriptions.length) {
      void command('session.unsubscribe', {subscriptions: state.subscriptions});
    }
    for (const intercept of state.intercepts) {
      void command('network.removeIntercept', {intercept});
    }
    // removeIntercept does not release a request it already holds: one that only this
    // socket's intercepts held would wait forever, and its tab with it. Failed, not
    // continued: nobody allowed it (chromedriver leaves it blocked).
    const live = new Set([...sockets.values()].flatMap((s) => s.intercepts));
    for (const [request, {phase, intercepts}] of state.held) {
      if (intercepts.some((i) => live.has(i))) continue; // another socket answers it
      if (phase === 'network.authRequired') {
        void command('network.continueWithAuth', {request, action: 'cancel'});
      } else {
        void command('network.failRequest', {request});
      }
    }
  });
  ws.on('error', () => {});
}

let closing = false;
async function closeBrowser() {
  if (closing) return;
  closing = true;
  ready = false;
  try {
    await Promise.race([
      browserClient.sendCommand('Browser.close'),
      new Promise((r) => setTimeout(r, 5000)),
    ]);
  } catch {
    // the pipe is closed: the browser is already gone
  }
  const deadline = Date.now() + 5000;
  while (!chromeGone && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  if (!chromeGone) chrome.kill('SIGKILL');
  shutdown();
}

function shutdown() {
  for (const s of sockets.values()) s.ws.terminate();
  sockets.clear();
  server.close();
  setTimeout(() => process.exit(0), 50).unref();
}

server.listen({fd: 3}); // bound to 127.0.0.1:<port> by sitekeep (see the header)
