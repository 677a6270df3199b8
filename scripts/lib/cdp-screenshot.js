// Real-time screenshot of a page in headless Chromium, for scripts/dashboard-screenshot.sh.
//
//   node scripts/lib/cdp-screenshot.js URL OUT.png [--seconds S] [--width W] [--height H]
//       [--samples N]
//
// Unlike `chromium --screenshot --virtual-time-budget`, which runs the page's timers in virtual
// time (a minute of polls in a fraction of a real second, so live charts stay empty), this keeps
// the page open for S real seconds before the capture. It drives Chromium over the DevTools
// protocol on a pipe (--remote-debugging-pipe: fd 3 in, fd 4 out, NUL-separated JSON), so it
// needs nothing but node and chromium. Chromium gets its own temporary profile, removed at exit.
//
// KEYFLOW_DASHBOARD_TOKEN_FILE (environment): a REST token file (a secure cluster's dashboard
// asks for one); its token is appended to URL as the fragment #token=..., which the page stores
// in its session and removes from the address. The token goes to Chromium over the DevTools
// pipe, never on a command line.
//
// --samples N (scripts/dashboard-soak.sh): N times during the S seconds, after a forced garbage
// collection, prints one line "t_s=.. js_heap_bytes=.. dom_nodes=.. listeners=.. polls=.."
// (the page's JS heap, its DOM node and event-listener counts, body[data-polls]), so a long run
// shows whether the page's memory stays flat. OUT.png may then be "-": no screenshot.
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

function usage(msg) {
  if (msg) process.stderr.write('cdp-screenshot: ' + msg + '\n');
  process.stderr.write('usage: node cdp-screenshot.js URL OUT.png [--seconds S] [--width W] ' +
    '[--height H]\n');
  process.exit(2);
}

const args = process.argv.slice(2);
const positional = [];
const opts = { seconds: 20, width: 1400, height: 1000, samples: 0 };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a.startsWith('--')) {
    const key = a.slice(2);
    if (!(key in opts)) usage('unknown option ' + a);
    const v = Number(args[++i]);
    if (!Number.isFinite(v) || v <= 0) usage(a + ' needs a positive number');
    opts[key] = v;
  } else {
    positional.push(a);
  }
}
if (positional.length !== 2) usage('needs URL and OUT.png');
const [url, out] = positional;

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'keyflow-cdp-'));
const chromium = spawn('chromium', [
  '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
  '--no-default-browser-check', '--disable-extensions', '--hide-scrollbars',
  '--user-data-dir=' + profile, '--remote-debugging-pipe',
  '--window-size=' + opts.width + ',' + opts.height,
  // An HTTPS dashboard with a self-signed certificate: trust that one key (SPKI SHA-256, base64).
  ...(process.env.KEYFLOW_CHROMIUM_SPKI
    ? ['--ignore-certificate-errors-spki-list=' + process.env.KEYFLOW_CHROMIUM_SPKI] : []),
  'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let stderr = '';
chromium.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });

let finishing = false;
function finish(code, msg) {
  if (finishing) return;
  finishing = true;
  if (msg) process.stderr.write('cdp-screenshot: ' + msg + '\n');
  // Remove the profile once chromium is gone (it writes into it until then).
  const done = () => {
    try {
      fs.rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch (e) {
      process.stderr.write('cdp-screenshot: could not remove ' + profile + ': ' + e.message + '\n');
    }
    process.exit(code);
  };
  if (chromium.exitCode !== null || chromium.signalCode !== null) {
    done();
    return;
  }
  chromium.removeAllListeners('exit');
  chromium.once('exit', done);
  chromium.kill('SIGKILL');
  setTimeout(done, 3000);
}
chromium.on('error', (e) => finish(1, 'cannot start chromium: ' + e.message));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => finish(1, 'stopped by ' + sig));
chromium.on('exit', (code) => finish(1, 'chromium exited (' + code + ') early:\n' + stderr));
const watchdog = setTimeout(() => finish(1, 'not done after ' + (opts.seconds + 60) + ' s'),
  (opts.seconds + 60) * 1000);

// ---- the protocol -----------------------------------------------------------------------------
const toChromium = chromium.stdio[3];
const fromChromium = chromium.stdio[4];
let nextId = 1;
const waiting = new Map();
const eventWaiters = [];
let buffer = '';
fromChromium.on('data', (chunk) => {
  buffer += chunk.toString('utf8');
  let nul;
  while ((nul = buffer.indexOf('\0')) >= 0) {
    const msg = JSON.parse(buffer.slice(0, nul));
    buffer = buffer.slice(nul + 1);
    if (msg.id && waiting.has(msg.id)) {
      const { resolve, reject } = waiting.get(msg.id);
      waiting.delete(msg.id);
      if (msg.error) reject(new Error(JSON.stringify(msg.error))); else resolve(msg.result);
    } else if (msg.method) {
      for (let i = eventWaiters.length - 1; i >= 0; i--) {
        if (eventWaiters[i].method === msg.method && eventWaiters[i].sessionId === msg.sessionId) {
          eventWaiters.splice(i, 1)[0].resolve(msg.params);
        }
      }
    }
  }
});
function send(method, params, sessionId) {
  const id = nextId++;
  const msg = { id, method, params: params || {} };
  if (sessionId) msg.sessionId = sessionId;
  toChromium.write(JSON.stringify(msg) + '\0');
  return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
}
function once(method, sessionId) {
  return new Promise((resolve) => eventWaiters.push({ method, sessionId, resolve }));
}

(async () => {
  const { targetInfos } = await send('Target.getTargets');
  const page = targetInfos.find((t) => t.type === 'page');
  if (!page) throw new Error('chromium opened no page');
  const { sessionId } = await send('Target.attachToTarget', { targetId: page.targetId, flatten: true });
  await send('Page.enable', {}, sessionId);
  await send('Emulation.setDeviceMetricsOverride',
    { width: opts.width, height: opts.height, deviceScaleFactor: 1, mobile: false }, sessionId);
  const loaded = once('Page.loadEventFired', sessionId);
  const tokenFile = process.env.KEYFLOW_DASHBOARD_TOKEN_FILE;
  const token = tokenFile ? fs.readFileSync(tokenFile, 'utf8').trim() : '';
  const target = token ? url + '#token=' + encodeURIComponent(token) : url;
  const nav = await send('Page.navigate', { url: target }, sessionId);
  if (nav.errorText) throw new Error('cannot load ' + url + ': ' + nav.errorText);
  await loaded;
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  if (opts.samples > 0) {
    const started = Date.now();
    for (let i = 1; i <= opts.samples; i++) {
      await sleep((opts.seconds * 1000) / opts.samples);
      await send('HeapProfiler.collectGarbage', {}, sessionId);
      const heap = await send('Runtime.getHeapUsage', {}, sessionId);
      const dom = await send('Memory.getDOMCounters', {}, sessionId);
      const polls = await send('Runtime.evaluate',
        { expression: 'document.body.dataset.polls', returnByValue: true }, sessionId);
      process.stdout.write('t_s=' + Math.round((Date.now() - started) / 1000) +
        ' js_heap_bytes=' + heap.usedSize + ' dom_nodes=' + dom.nodes +
        ' listeners=' + dom.jsEventListeners + ' polls=' + polls.result.value + '\n');
    }
  } else {
    await sleep(opts.seconds * 1000);
  }
  if (out !== '-') {
    const shot = await send('Page.captureScreenshot', { format: 'png' }, sessionId);
    fs.writeFileSync(out, Buffer.from(shot.data, 'base64'));
  }
  clearTimeout(watchdog);
  finish(0);
})().catch((e) => finish(1, e.message));
