// keyflow dashboard (coordinator/rest/dashboard.h): polls the coordinator's JSON API and draws
// the workers, the job, its subtasks and live charts with Chart.js. Plain JS, no framework, no
// inline code (the page's Content-Security-Policy forbids it), no innerHTML (job names and
// failure messages are user data: everything goes in through textContent).
//
// Bounded memory: each chart is created once and reused; each series keeps at most MAX_POINTS
// points; per-subtask and per-worker bookkeeping is dropped when the subtask or worker goes.
//
// Query parameters (for tests and the screenshot script): poll_ms=N (default 1000),
// max_points=N (default 300).
//
// Tokens: a secure cluster's API answers 401 without `Authorization: Bearer <token>`. The page
// then stops polling and asks for a token (a viewer's or an operator's), keeps it in
// sessionStorage (this tab only, gone when it closes) and sends it with every fetch; a refused
// token is forgotten and asked for again. A URL fragment #token=TOKEN (scripts, tests) is taken
// the same way and removed from the address at once; a fragment never reaches the server.
//
// The DOM exposes what a headless test checks: body[data-connection] ("ok" | "unreachable" |
// "connecting" | "token-needed"), body[data-polls] (successful polls), body[data-renders] (polls that brought a
// new snapshot and were drawn), body[data-csp-violations], body[data-wide-sections] ("ID:content
// width/section width" of each section whose content overflows it sideways, "" when all fit),
// body[data-page-width]
// ("document width/window width"); each chart's
// <figure> has data-points (the longest series), data-series and data-last (sum of the series'
// last values); each subtask row data-subtask and data-key-groups ("START-END", inclusive).
'use strict';

(function () {
  const params = new URLSearchParams(window.location.search);
  function intParam(name, fallback, min, max) {
    const v = Number.parseInt(params.get(name) || '', 10);
    return Number.isFinite(v) ? Math.min(max, Math.max(min, v)) : fallback;
  }
  const POLL_MS = intParam('poll_ms', 1000, 10, 60000);
  const MAX_POINTS = intParam('max_points', 300, 2, 100000);
  const FETCH_TIMEOUT_MS = 5000;
  const API = {
    workers: '/api/v1/workers',
    job: '/api/v1/job',
    subtasks: '/api/v1/job/subtasks',
    checkpoints: '/api/v1/job/checkpoints',
  };
  const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2',
    '#7f7f7f', '#bcbd22', '#17becf'];
  // A watermark outside this range is "none yet" (INT64_MIN) or "end of input" (INT64_MAX).
  const WATERMARK_LIMIT = 1e15;

  const $ = (id) => document.getElementById(id);
  const body = document.body;

  // ---- the REST token ---------------------------------------------------------------------

  const TOKEN_KEY = 'keyflow.rest-token';
  function loadToken() {
    try { return window.sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
  }
  function storeToken(t) {
    try {
      if (t) window.sessionStorage.setItem(TOKEN_KEY, t); else window.sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage disabled: the token lives as long as the page */ }
  }
  let token = loadToken();
  {
    const m = /(?:^#|&)token=([^&]*)/.exec(window.location.hash);
    if (m) {
      token = decodeURIComponent(m[1]).trim();
      storeToken(token);
      window.history.replaceState(null, '', window.location.pathname + window.location.search);
    }
  }
  let waitingForToken = false;

  let cspViolations = 0;
  body.dataset.cspViolations = '0';
  document.addEventListener('securitypolicyviolation', (e) => {
    cspViolations += 1;
    body.dataset.cspViolations = String(cspViolations);
    console.error('Content-Security-Policy violation: ' + e.violatedDirective + ' ' + e.blockedURI);
  });

  // ---- formatting -------------------------------------------------------------------------

  function fmtCount(n) {
    return typeof n === 'number' && Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–';
  }
  function fmtRate(n) {
    if (typeof n !== 'number' || !Number.isFinite(n)) return '–';
    return n >= 100 ? fmtCount(n) : n.toFixed(1);
  }
  function fmtBytes(n) {
    if (typeof n !== 'number' || !Number.isFinite(n)) return '–';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
    return (i === 0 ? String(n) : n.toFixed(1)) + ' ' + units[i];
  }
  function fmtMs(ms) {
    if (typeof ms !== 'number' || !Number.isFinite(ms)) return '–';
    if (Math.abs(ms) < 1000) return Math.round(ms) + ' ms';
    if (Math.abs(ms) < 120000) return (ms / 1000).toFixed(1) + ' s';
    if (Math.abs(ms) < 7200000) return (ms / 60000).toFixed(1) + ' min';
    return (ms / 3600000).toFixed(Math.abs(ms) < 3600000000 ? 1 : 0) + ' h';
  }
  function fmtClock(ms) {
    const d = new Date(ms);
    return d.toLocaleTimeString('en-GB', { hour12: false });
  }
  function validWatermark(w) {
    return typeof w === 'number' && w > -WATERMARK_LIMIT && w < WATERMARK_LIMIT;
  }
  // The status' latency summary: {"count": .., "p50_ms": .., "p99_ms": .., "p999_ms": ..}
  // (a quantile is null without samples); also accepts "p50"/"p99" (ms).
  function latencyMs(s, q) {
    const l = s && s.latency;
    if (!l || typeof l !== 'object' || l.count === 0) return undefined;
    const v = l[q + '_ms'] !== undefined ? l[q + '_ms'] : l[q];
    return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
  }
  function stateBytes(s) {
    if (!s.state_backend) return undefined;  // the keyed task has not reported a backend yet
    const mem = s.state_bytes_memory, disk = s.state_bytes_disk;
    if (typeof mem !== 'number' && typeof disk !== 'number') return undefined;
    return (mem || 0) + (disk || 0);
  }

  // ---- DOM helpers ------------------------------------------------------------------------

  function el(tag, text, attrs) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (attrs) for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    return e;
  }
  function row(cells, attrs) {
    const tr = el('tr', null, attrs);
    for (const c of cells) {
      if (c instanceof Node) tr.appendChild(c); else tr.appendChild(el('td', c));
    }
    return tr;
  }
  const num = (text) => el('td', text, { class: 'num' });
  // A count in a narrow cell: exact up to 999,999, then 3 digits and k/M/G/T ("9.88 G"), the
  // exact number on hover.
  function countCell(n) {
    if (typeof n !== 'number' || !Number.isFinite(n) || Math.abs(n) < 1e6) return num(fmtCount(n));
    const units = ['', 'k', 'M', 'G', 'T', 'P'];
    let v = n;
    let i = 0;
    while (Math.abs(v) >= 1000 && i < units.length - 1) { v /= 1000; i += 1; }
    const text = (Math.abs(v) < 10 ? v.toFixed(2) : Math.abs(v) < 100 ? v.toFixed(1) : v.toFixed(0)) +
      ' ' + units[i];
    return el('td', text, { class: 'num', title: fmtCount(n) });
  }
  const WIDE_FACTS = new Set(['job_id', 'restart_strategy', 'last_command', 'failure', 'source',
    'last_failure', 'waiting_for', 'commands_in_progress']);
  function facts(dl, items) {
    const nodes = [];
    for (const [label, field, value, cls] of items) {
      if (value === undefined || value === null || value === '') continue;
      const div = el('div', null, WIDE_FACTS.has(field) ? { class: 'wide' } : undefined);
      div.appendChild(el('dt', label));
      const dd = el('dd', value, { 'data-field': field });
      if (cls) dd.className = cls;
      div.appendChild(dd);
      nodes.push(div);
    }
    dl.replaceChildren(...nodes);
  }

  // ---- charts -----------------------------------------------------------------------------

  // One Chart.js line chart, created once; one dataset per series key (e.g. a subtask).
  class SeriesChart {
    constructor(figureId, options) {
      this.figure = $(figureId);
      this.options = options || {};
      this.series = new Map();  // key -> {label, data: [{x, y}], color, axis}
      this.chart = null;
    }
    ensureChart() {
      if (this.chart !== null || typeof window.Chart === 'undefined') return;
      const scales = {
        x: {
          type: 'linear',
          ticks: { maxTicksLimit: 6, callback: this.options.xLabel || ((v) => fmtClock(v)) },
        },
        y: { beginAtZero: true, ticks: { maxTicksLimit: 6 } },
      };
      if (this.options.y1) {
        scales.y1 = { position: 'right', beginAtZero: true, grid: { drawOnChartArea: false },
          ticks: { maxTicksLimit: 6, callback: (v) => fmtBytes(v) } };
      }
      this.chart = new window.Chart(this.figure.querySelector('canvas'), {
        type: 'line',
        data: { datasets: [] },
        options: {
          animation: false,
          parsing: false,
          normalized: true,
          responsive: true,
          maintainAspectRatio: false,
          interaction: { mode: 'nearest', intersect: false },
          elements: { point: { radius: this.options.points ? 2 : 0 }, line: { borderWidth: 1.5 } },
          plugins: { legend: { position: 'bottom', labels: { boxWidth: 10 } } },
          scales,
        },
      });
    }
    push(key, label, x, y, axis) {
      if (typeof y !== 'number' || !Number.isFinite(y)) return;
      let s = this.series.get(key);
      if (!s) {
        const color = COLORS[this.series.size % COLORS.length];
        s = { label, data: [], color, axis: axis || 'y' };
        this.series.set(key, s);
      }
      const last = s.data[s.data.length - 1];
      if (last && last.x >= x) return;  // the same snapshot again, or time went back
      s.data.push({ x, y });
      if (s.data.length > MAX_POINTS) s.data.splice(0, s.data.length - MAX_POINTS);
    }
    // Replaces a series' points (e.g. the checkpoint history, already bounded).
    set(key, label, points, axis) {
      const s = this.series.get(key) ||
        { label, data: [], color: COLORS[this.series.size % COLORS.length], axis: axis || 'y' };
      s.data.splice(0, s.data.length, ...points.slice(-MAX_POINTS));
      this.series.set(key, s);
    }
    // Drops the series whose key is not in `keys` (a subtask gone after a rescale).
    retain(keys) {
      for (const key of [...this.series.keys()]) if (!keys.has(key)) this.series.delete(key);
    }
    render() {
      let points = 0, last = 0;
      for (const s of this.series.values()) {
        points = Math.max(points, s.data.length);
        if (s.data.length > 0) last += s.data[s.data.length - 1].y;
      }
      this.figure.dataset.points = String(points);
      this.figure.dataset.series = String(this.series.size);
      this.figure.dataset.last = String(Math.round(last * 1000) / 1000);
      if (!this.options.alwaysShown) this.figure.hidden = points === 0;
      if (this.figure.hidden) return;
      this.ensureChart();
      if (this.chart === null) return;
      // Reuse the chart and its dataset objects; only the arrays' contents change.
      const datasets = this.chart.data.datasets;
      const wanted = [...this.series.values()];
      datasets.length = wanted.length;
      wanted.forEach((s, i) => {
        const d = datasets[i] || (datasets[i] = {});
        d.label = s.label;
        d.data = s.data;
        d.borderColor = s.color;
        d.backgroundColor = s.color;
        d.yAxisID = s.axis;
      });
      this.chart.update('none');
    }
  }

  const charts = {
    records: new SeriesChart('chart-records', { alwaysShown: true }),
    watermarkLag: new SeriesChart('chart-watermark-lag'),
    backpressure: new SeriesChart('chart-backpressure'),
    latency: new SeriesChart('chart-latency'),
    consumerLag: new SeriesChart('chart-consumer-lag'),
    checkpoints: new SeriesChart('chart-checkpoints',
      { alwaysShown: true, y1: true, points: true, xLabel: (v) => '#' + v }),
  };

  // ---- bookkeeping between polls (bounded by the subtasks and workers that exist) ----------

  const prevSubtask = new Map();  // subtask index -> {attempt, t, processed}
  const prevWorker = new Map();   // "worker/pid" -> {t, cpu}
  const checkpointHistory = new Map();  // id -> stats, at most MAX_POINTS
  // The checkpoints already fetched: each poll asks only for newer ones (?since_id=), of the
  // job they belong to (another job starts over).
  let checkpointJob = null;
  let newestCheckpoint = 0;
  let polls = 0;
  let renders = 0;
  let lastSnapshots = '';  // the snapshot sequences of the last rendered poll
  let unreachableSince = null;
  let lastError = '';

  // ---- fetching ---------------------------------------------------------------------------

  async function getJson(url) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), FETCH_TIMEOUT_MS);
    try {
      const headers = token ? { Authorization: 'Bearer ' + token } : {};
      const r = await fetch(url, { cache: 'no-store', signal: controller.signal, headers });
      let data = null;
      try { data = await r.json(); } catch (e) { data = null; }
      return { status: r.status, data, date: r.headers.get('Date') };
    } finally {
      clearTimeout(timer);
    }
  }

  function errorText(res, what) {
    const msg = res.data && typeof res.data.error === 'string' ? ': ' + res.data.error : '';
    return what + ' answered HTTP ' + res.status + msg;
  }

  // The time of the status a response shows: the snapshot's publication time when the API
  // gives it, else this browser's clock.
  function snapshotTime(...docs) {
    for (const d of docs) {
      if (!d || typeof d !== 'object') continue;
      for (const k of ['published_at_ms', 'snapshot_ms']) {
        if (typeof d[k] === 'number') return d[k];
      }
      if (d.snapshot && typeof d.snapshot.published_at_ms === 'number') {
        return d.snapshot.published_at_ms;
      }
    }
    return Date.now();
  }

  async function poll() {
    try {
      const [workersRes, jobRes, subtasksRes, checkpointsRes] = await Promise.all(
        [getJson(API.workers), getJson(API.job), getJson(API.subtasks),
          getJson(API.checkpoints + '?since_id=' + newestCheckpoint)]);
      const refused = [workersRes, jobRes, subtasksRes, checkpointsRes].find((r) => r.status === 401);
      if (refused) {
        askForToken(refused);
        return;
      }
      if (workersRes.status !== 200) throw new Error(errorText(workersRes, API.workers));
      if (jobRes.status !== 200 && jobRes.status !== 404) throw new Error(errorText(jobRes, API.job));
      const workers = unwrapList(workersRes.data, 'workers');
      const job = jobRes.status === 200 ? unwrap(jobRes.data, 'job') : null;
      // The job document may carry its subtasks, or leave them to /api/v1/job/subtasks.
      let subtasks = [];
      let subtasksDoc = jobRes.data;
      if (job && Array.isArray(job.subtasks)) {
        subtasks = job.subtasks;
      } else if (job && subtasksRes.status === 200) {
        subtasks = unwrapList(subtasksRes.data, 'subtasks');
        subtasksDoc = subtasksRes.data;
      }
      const checkpoints = job && checkpointsRes.status === 200 ? checkpointsRes.data : null;
      polls += 1;
      // The same snapshots as last time (polls faster than the coordinator publishes): nothing
      // changed, so nothing is redrawn.
      const snapshots = [workersRes, jobRes, subtasksRes, checkpointsRes]
        .map((r) => snapshotSequence(r.data)).join(',');
      const unchanged = snapshots === lastSnapshots && !snapshots.includes('?');
      lastSnapshots = snapshots;
      if (!unchanged) render({
        workersTime: snapshotTime(workersRes.data),
        subtasksTime: snapshotTime(subtasksDoc),
        workers, job, subtasks, checkpoints,
      });
      setReachable();
    } catch (e) {
      setUnreachable(e && e.name === 'AbortError'
        ? 'no answer within ' + (FETCH_TIMEOUT_MS / 1000) + ' s'
        : (e && e.message) || String(e));
    } finally {
      if (!waitingForToken) window.setTimeout(poll, POLL_MS);
    }
  }

  // The API answered 401: stop polling (each refused request is counted and logged by the
  // coordinator) until a token is given.
  function askForToken(res) {
    const why = res.data && typeof res.data.error === 'string' ? res.data.error : '';
    $('token-reason').textContent = token
      ? 'The coordinator refused the token this tab had' + (why ? ': ' + why : '.')
      : 'Its REST API answers only requests with a token.';
    token = '';
    storeToken('');
    waitingForToken = true;
    body.dataset.connection = 'token-needed';
    $('cluster-summary').textContent = 'waiting for a token';
    $('updated').textContent = '';
    $('banner').hidden = true;
    $('forget-token').hidden = true;
    $('token-prompt').hidden = false;
    $('token-input').focus();
  }
  function useToken() {
    const t = $('token-input').value.trim();
    if (!t) return;
    $('token-input').value = '';
    token = t;
    storeToken(t);
    $('token-prompt').hidden = true;
    $('forget-token').hidden = false;
    body.dataset.connection = 'connecting';
    if (waitingForToken) {
      waitingForToken = false;
      poll();
    }
  }
  $('token-submit').addEventListener('click', useToken);
  $('token-input').addEventListener('keydown', (e) => { if (e.key === 'Enter') useToken(); });
  $('forget-token').addEventListener('click', () => {
    token = '';
    storeToken('');
    $('forget-token').hidden = true;
  });

  // The publication sequence number of the snapshot a response shows ('?' if it has none).
  function snapshotSequence(doc) {
    const s = doc && doc.snapshot;
    return s && typeof s.sequence === 'number' ? String(s.sequence) : '?';
  }

  function unwrap(doc, key) {
    if (doc && typeof doc === 'object' && !Array.isArray(doc) && doc[key] !== undefined &&
        (doc[key] === null || typeof doc[key] === 'object') && doc.state === undefined) {
      return doc[key];
    }
    return doc;
  }
  function unwrapList(doc, key) {
    if (Array.isArray(doc)) return doc;
    if (doc && Array.isArray(doc[key])) return doc[key];
    return [];
  }

  function setReachable() {
    unreachableSince = null;
    body.dataset.connection = 'ok';
    body.dataset.polls = String(polls);
    $('banner').hidden = true;
  }
  function setUnreachable(reason) {
    if (unreachableSince === null) unreachableSince = Date.now();
    lastError = reason;
    body.dataset.connection = 'unreachable';
    const banner = $('banner');
    banner.textContent = 'Coordinator unreachable since ' + fmtClock(unreachableSince) + ' (' +
      lastError + '); retrying every ' + fmtMs(POLL_MS) + '. The data below is from before.';
    banner.hidden = false;
  }

  // ---- rendering --------------------------------------------------------------------------

  function render(p) {
    renders += 1;
    body.dataset.renders = String(renders);
    $('updated').textContent = 'status of ' + fmtClock(p.subtasksTime);
    renderWorkers(p.workersTime, p.workers);
    renderJob(p.job);
    renderSubtasks(p.subtasksTime, p.job, p.subtasks);
    renderCheckpoints(p.job, p.checkpoints);
    // What the width test reads: sections whose content is wider than they are (they would
    // scroll sideways) and the page's width against the window's.
    body.dataset.wideSections = [...document.querySelectorAll('main section')]
      .filter((s) => !s.hidden && s.scrollWidth > s.clientWidth)
      .map((s) => s.id + ':' + s.scrollWidth + '/' + s.clientWidth).join(' ');
    body.dataset.pageWidth = document.documentElement.scrollWidth + '/' + window.innerWidth;
  }

  function renderWorkers(t, workers) {
    const seen = new Set();
    const rows = workers.map((w) => {
      const key = w.worker + '/' + w.pid;
      seen.add(key);
      const u = w.usage || {};
      // CPU %: the coordinator's own figure when it has one, else from two snapshots' CPU time.
      let cpu = typeof u.cpu_percent === 'number' ? u.cpu_percent : undefined;
      const cpuSeconds = typeof u.cpu_seconds === 'number' ? u.cpu_seconds : undefined;
      if (cpu === undefined && cpuSeconds !== undefined) {
        const p = prevWorker.get(key);
        if (p && t > p.t) cpu = ((cpuSeconds - p.cpu) / ((t - p.t) / 1000)) * 100;
        else if (p && t === p.t) cpu = p.percent;
        if (!p || t > p.t) prevWorker.set(key, { t, cpu: cpuSeconds, percent: cpu });
      }
      return row([num(w.worker), num(w.slot), w.host, num(w.pid),
        num(typeof w.last_heartbeat_ms_ago === 'number' ? fmtMs(w.last_heartbeat_ms_ago) + ' ago' : '–'),
        num(fmtBytes(u.rss_bytes)), num(cpu === undefined ? '–' : cpu.toFixed(0) + ' %'),
        num(fmtCount(u.open_fds))], { 'data-worker': String(w.worker) });
    });
    for (const key of [...prevWorker.keys()]) if (!seen.has(key)) prevWorker.delete(key);
    $('workers').tBodies[0].replaceChildren(...rows);
    const slots = workers.length;
    $('cluster-summary').textContent = slots + (slots === 1 ? ' worker' : ' workers');
  }

  // The job's source, for a Kafka source with its consumer lag: "Kafka topic t: 3 partitions,
  // consumer lag 120 records (4.2 s)"; for a monitored directory its file count.
  function sourceText(src) {
    if (!src || typeof src !== 'object') return undefined;
    if (src.kind === 'monitor') return 'monitoring ' + src.directory + ': ' + fmtCount(src.splits) + ' files';
    if (src.kind !== 'kafka') return undefined;
    const topics = Array.isArray(src.topics) ? src.topics : [];
    let text = src.topic_pattern
      ? 'Kafka topics matching /' + src.topic_pattern + '/'
      : 'Kafka topic' + (topics.length === 1 ? ' ' : 's ') + topics.join(', ');
    text += ': ' + fmtCount(src.splits) + ' partitions';
    if (typeof src.lag_records === 'number' && src.lag_records >= 0) {
      text += ', consumer lag ' + fmtCount(src.lag_records) + ' records';
      if (typeof src.lag_ms === 'number' && src.lag_ms >= 0) text += ' (' + fmtMs(src.lag_ms) + ')';
    }
    if (src.lag_error) text += '; lag not measured: ' + src.lag_error;
    if (src.discovery_error) text += '; discovery failed: ' + src.discovery_error;
    return text;
  }

  function renderJob(job) {
    $('no-job').hidden = job !== null && job !== undefined;
    const src = job && job.source;
    const lagTime = job && job.snapshot ? job.snapshot.published_at_ms : undefined;
    if (src && src.kind === 'kafka' && typeof lagTime === 'number' && src.lag_records >= 0) {
      charts.consumerLag.push('records', 'records behind', lagTime, src.lag_records);
    } else if (!src || src.kind !== 'kafka') {
      charts.consumerLag.retain(new Set());
    }
    charts.consumerLag.render();
    if (!job) {
      $('job').replaceChildren();
      $('rescale').hidden = true;
      return;
    }
    const last = job.last_command
      ? job.last_command.command + (job.last_command.outcome ? ': ' + job.last_command.outcome : '')
      : undefined;
    const inProgress = Array.isArray(job.commands_in_progress) && job.commands_in_progress.length
      ? job.commands_in_progress.join(', ') : undefined;
    facts($('job'), [
      ['job', 'job', job.job],
      ['job id', 'job_id', job.job_id],
      ['state', 'state', job.state, 'state-' + job.state],
      ['attempt', 'attempt', job.attempt],
      ['parallelism', 'parallelism',
        job.parallelism + (job.max_parallelism ? ' (max ' + job.max_parallelism + ')' : '')],
      ['restarts', 'restarts', job.restarts],
      ['restart strategy', 'restart_strategy', job.restart_strategy],
      ['running for', 'duration', fmtMs(job.duration_ms)],
      ['records in', 'records_in', fmtCount(job.records_in)],
      ['records processed', 'records_processed', fmtCount(job.records_processed)],
      ['records out', 'records_out', fmtCount(job.records_out)],
      ['bad / late records', 'bad_late', fmtCount(job.bad_records) + ' / ' + fmtCount(job.late_records)],
      ['last command', 'last_command', last],
      ['commands in progress', 'commands_in_progress', inProgress],
      ['waiting for', 'waiting_for', job.waiting_for],
      ['failure', 'failure', job.failure, 'state-FAILED'],
      ['last failure', 'last_failure', job.last_failure],
      ['input', 'source', sourceText(job.source)],
      ['state backend', 'state_backend', job.state_backend],
      ['library', 'job_library', job.job_library ? job.job_library.file_name : undefined],
    ]);
    const r = job.rescale;
    $('rescale').hidden = !r;
    if (r) {
      const phases = ['waiting for workers', 'savepoint', 'deploying'];
      const i = phases.indexOf(r.phase);
      $('rescale-text').textContent = 'Rescaling to parallelism ' + r.target + ': ' + r.phase +
        (i >= 0 ? ' (step ' + (i + 1) + ' of ' + phases.length + ')' : '') + ', ' +
        fmtMs(r.elapsed_ms) + ' so far';
      $('rescale-bar').className = i >= 0 ? 'phase-' + i : '';
    }
  }

  // "worker 1 (slot 0, host h, pid 7)": the short name in the cell, all of it on hover.
  function workerCell(description) {
    const text = typeof description === 'string' ? description : '';
    const paren = text.indexOf(' (');
    return el('td', paren > 0 ? text.slice(0, paren) : text, { title: text });
  }

  function renderSubtasks(t, job, subtasks) {
    const attempt = job ? job.attempt : 0;
    const keys = new Set();
    const rows = subtasks.map((s) => {
      const key = s.subtask;
      keys.add(key);
      const label = 'subtask ' + s.subtask;
      // records/s from the counters of two snapshots of the same attempt; the same snapshot
      // again keeps the last rate; a new attempt (counters restart) starts over.
      const p = prevSubtask.get(key);
      let rate = p && p.attempt === attempt ? p.rate : undefined;
      if (!p || p.attempt !== attempt || s.records_processed < p.processed) {
        rate = undefined;
        prevSubtask.set(key, { attempt, t, processed: s.records_processed, rate });
      } else if (t > p.t) {
        rate = (s.records_processed - p.processed) / ((t - p.t) / 1000);
        prevSubtask.set(key, { attempt, t, processed: s.records_processed, rate });
        charts.records.push(key, label, t, rate);
      }
      const lag = validWatermark(s.watermark) ? (t - s.watermark) / 1000 : undefined;
      if (lag !== undefined) charts.watermarkLag.push(key, label, t, lag);
      if (typeof s.backpressure === 'number') charts.backpressure.push(key, label, t, s.backpressure);
      const p99 = latencyMs(s, 'p99');
      if (p99 !== undefined) charts.latency.push(key, label, t, p99);
      const p50 = latencyMs(s, 'p50');
      const p999 = latencyMs(s, 'p999');
      // 3 significant digits at most (the unit is in the header): 0.42, 5.1, 322.
      const ms = (v) => (v === undefined ? '–' : v.toFixed(v < 10 ? (v < 1 ? 2 : 1) : 0));
      const range = Array.isArray(s.key_groups) ? s.key_groups[0] + '-' + s.key_groups[1] : '';
      return row([
        num(s.subtask), el('td', range, { class: 'key-groups' }), workerCell(s.worker),
        el('td', s.state, { class: 'state-' + s.state }),
        countCell(s.records_in), countCell(s.records_processed), countCell(s.records_out),
        num(fmtRate(rate)), num(lag === undefined ? '–' : fmtMs(lag * 1000)),
        num(typeof s.backpressure === 'number' ? (s.backpressure * 100).toFixed(0) + ' %' : '–'),
        num(p99 === undefined ? '–' : ms(p50) + ' / ' + ms(p99) + ' / ' + ms(p999)),
        s.state_backend || '–', num(fmtBytes(stateBytes(s))),
        countCell(s.state_keys), countCell(s.timers),
      ], { 'data-subtask': String(s.subtask), 'data-key-groups': range });
    });
    for (const k of [...prevSubtask.keys()]) if (!keys.has(k)) prevSubtask.delete(k);
    for (const c of [charts.records, charts.watermarkLag, charts.backpressure, charts.latency]) {
      c.retain(keys);
      c.render();
    }
    $('subtasks').tBodies[0].replaceChildren(...rows);
  }

  function renderCheckpoints(job, doc) {
    // The checkpoints endpoint's history (or its recent ones), else the job document's.
    const ck = doc || (job && job.checkpoints) || null;
    let list = null;
    for (const d of [doc, job && job.checkpoints]) {
      if (list === null && d && Array.isArray(d.history)) list = d.history;
      if (list === null && d && Array.isArray(d.recent)) list = d.recent;
    }
    const jobId = (doc && doc.job_id) || (job && job.job_id) || null;
    if (jobId !== checkpointJob) {
      // Fetched above the previous job's ids: the next poll fetches all of this job's.
      if (newestCheckpoint > 0) list = null;
      checkpointJob = jobId;
      checkpointHistory.clear();
      newestCheckpoint = 0;
    }
    for (const c of list || []) {
      if (typeof c.id === 'number') checkpointHistory.set(c.id, c);
      if (typeof c.id === 'number' && c.id > newestCheckpoint) newestCheckpoint = c.id;
    }
    const ids = [...checkpointHistory.keys()].sort((a, b) => a - b);
    for (const id of ids.slice(0, Math.max(0, ids.length - MAX_POINTS))) checkpointHistory.delete(id);
    const kept = ids.slice(-MAX_POINTS).map((id) => checkpointHistory.get(id));
    const done = kept.filter((c) => c.state === 'COMPLETED' || c.state === undefined);
    charts.checkpoints.set('duration', 'duration (ms)',
      done.filter((c) => typeof c.duration_ms === 'number').map((c) => ({ x: c.id, y: c.duration_ms })));
    charts.checkpoints.set('bytes', 'size (bytes)',
      done.filter((c) => typeof c.bytes === 'number').map((c) => ({ x: c.id, y: c.bytes })), 'y1');
    charts.checkpoints.render();
    const us = (v) => (typeof v === 'number' ? fmtMs(v / 1000) : '–');
    const rows = kept.slice(-10).reverse().map((c) => row([
      num(c.id), c.savepoint ? 'savepoint' : 'checkpoint', el('td', c.state, { class: 'state-' + c.state }),
      num(fmtMs(c.duration_ms)), num(fmtBytes(c.bytes)),
      num(us(c.sync_us) + ' / ' + us(c.async_us) + ' / ' + us(c.alignment_us)), c.failure || '',
    ], { 'data-checkpoint': String(c.id) }));
    $('checkpoints').tBodies[0].replaceChildren(...rows);
    $('checkpoint-summary').textContent = ck && typeof ck.interval_ms === 'number'
      ? (ck.interval_ms > 0 ? 'every ' + fmtMs(ck.interval_ms) : 'periodic checkpoints off') + ', latest completed #' + (ck.latest_completed || '–') +
        ', ' + (ck.pending || 0) + ' pending, ' + (ck.consecutive_failures || 0) +
        ' consecutive failures (tolerated: ' + (ck.tolerable_failures === undefined ? '–' : ck.tolerable_failures) + ')'
      : '';
  }

  $('forget-token').hidden = !token;
  $('poll-interval').textContent = fmtMs(POLL_MS);
  $('max-points').textContent = String(MAX_POINTS);
  poll();
})();
