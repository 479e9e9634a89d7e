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
import {NetworkRequest} from 'chromium-bidi/out/Default/gen/src/bidiMapper/modules/network/NetworkRequest.js';

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

// -- chromium-bidi workaround (17.0.2; 157.0.8090-0's NetworkRequest.js still has it): a
// challenge that comes again while its answer is in flight.
// NetworkRequest.continueWithAuth awaits CDP Fetch.continueWithAuth, then marks the request
// unblocked. Over a pipe the retry's Fetch.authRequired (wrong credentials: the proxy asks
// again) can arrive before that reply, so the new block was marked unblocked at once: its
// network.authRequired event went out, its answer got "no such request", and the request — and
// every later request through that proxy, which Chromium holds behind the open challenge —
// waited for ever. A challenge arriving while an answer is in flight is taken after it.
const answering = new WeakMap(); // NetworkRequest -> its continueWithAuth in flight
const continueWithAuth = NetworkRequest.prototype.continueWithAuth;
NetworkRequest.prototype.continueWithAuth = function (...params) {
  const done = continueWithAuth.apply(this, params);
  const settled = done.catch(() => {});
  answering.set(this, settled);
  void settled.then(() => answering.get(this) === settled && answering.delete(this));
  return done;
};
const onAuthRequired = NetworkRequest.prototype.onAuthRequired;
NetworkRequest.prototype.onAuthRequired = function (event) {
  const inFlight = answering.get(this);
  if (inFlight === undefined) return onAuthRequired.call(this, event);
  void inFlight.then(() => onAuthRequired.call(this, event));
};

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

class PipeTransport {
  #write;
  #onMessage = () => {};
  #pending = [];
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
    this.#write.write(message + '\0');
  }
  #dispatch(chunk) {
    // Buffers, not strings: a UTF-8 character may be split between two chunks.
    let start = 0;
    let end = chunk.indexOf(0);
    while (end !== -1) {
      this.#pending.push(chunk.subarray(start, end));
      const message = Buffer.concat(this.#pending).toString('utf8');
      this.#pending = [];
      this.#onMessage(message);
      start = end + 1;
      end = chunk.indexOf(0, start);
    }
    if (start < chunk.length) this.#pending.push(chunk.subarray(start));
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
