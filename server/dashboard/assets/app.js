// cairn dashboard: plain JavaScript, no framework, no build step.
//
// Everything goes through the member's JSON gateway (/v3/...) and the
// dashboard's endpoints (/ui/api/...), with the token of the user who
// logged in. The token lives in the `session` object only: never in
// localStorage, sessionStorage or a cookie, so reloading logs out.
// All data is put on the page with textContent (see h()), never as HTML.
'use strict';

const session = { token: '', user: '', authEnabled: false };
const REFRESH_MS = 2000;

// ---- small helpers ---------------------------------------------------------

function $(id) { return document.getElementById(id); }

// h builds an element; strings among children become text nodes.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return el;
}

function fill(tbody, rows) { tbody.replaceChildren(...rows); }

const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

function bytesToB64(bytes) {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}
function b64ToBytes(b64) {
  const s = atob(b64 || '');
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
function strToB64(s) { return bytesToB64(enc.encode(s)); }
// bytesToText decodes UTF-8, or shows the bytes escaped when they are not.
function bytesToText(bytes) {
  try { return dec.decode(bytes); } catch (e) {
    return Array.from(bytes, b => (b >= 32 && b < 127) ? String.fromCharCode(b) : '\\x' + b.toString(16).padStart(2, '0')).join('');
  }
}
function b64ToText(b64) { return bytesToText(b64ToBytes(b64)); }
function hexDump(bytes) {
  const lines = [];
  for (let i = 0; i < bytes.length; i += 16) {
    const row = bytes.slice(i, i + 16);
    const hex = Array.from(row, b => b.toString(16).padStart(2, '0')).join(' ');
    const asc = Array.from(row, b => (b >= 32 && b < 127) ? String.fromCharCode(b) : '.').join('');
    lines.push(i.toString(16).padStart(8, '0') + '  ' + hex.padEnd(48) + ' ' + asc);
  }
  return lines.join('\n');
}
// prefixEnd is the range end that covers every key starting with bytes.
function prefixEnd(bytes) {
  const end = Uint8Array.from(bytes);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) { end[i]++; return end.slice(0, i + 1); }
  }
  return Uint8Array.of(0); // all keys
}
function humanBytes(n) {
  n = Number(n || 0);
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return (i === 0 ? n : n.toFixed(1)) + ' ' + units[i];
}
function num(v) { return v === undefined || v === null ? 0 : Number(v); }

// ---- talking to the member -------------------------------------------------

class APIError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

function authHeaders(extra) {
  const hd = Object.assign({}, extra || {});
  if (session.token) hd['Authorization'] = session.token;
  return hd;
}

async function parseAnswer(resp) {
  const text = await resp.text();
  let body = {};
  try { body = text ? JSON.parse(text) : {}; } catch (e) { body = { message: text }; }
  if (!resp.ok || (body && body.code && body.message && !body.header)) {
    const err = new APIError(resp.status, body.code, body.message || ('HTTP ' + resp.status));
    if (/invalid auth token|user name is empty|token is expired/.test(err.message) && session.authEnabled) {
      session.token = '';
      showLogin('Your session ended: log in again.');
    }
    throw err;
  }
  return body;
}

// gw calls a gateway endpoint, e.g. gw('kv/range', {key: ...}).
async function gw(path, body) {
  const resp = await fetch('/v3/' + path, {
    method: 'POST', headers: authHeaders({ 'Content-Type': 'application/json' }), body: JSON.stringify(body || {}),
  });
  return parseAnswer(resp);
}

// ui calls a dashboard endpoint (GET).
async function ui(path) {
  const resp = await fetch('/ui/api/' + path, { headers: authHeaders() });
  return parseAnswer(resp);
}

function showError(el, err) {
  el.replaceChildren(h('span', { class: 'error' }, err.message || String(err)));
}
function showOK(el, text) { el.replaceChildren(h('span', {}, text)); }

// ---- confirmation dialog ---------------------------------------------------

// confirmAction resolves true when the user clicks the dialog's button.
function confirmAction(title, text, okLabel) {
  return new Promise(resolve => {
    $('confirm-title').textContent = title;
    $('confirm-text').textContent = text;
    $('confirm-ok').textContent = okLabel || 'Do it';
    $('confirm').classList.remove('hidden');
    const done = (ok) => {
      $('confirm').classList.add('hidden');
      $('confirm-ok').onclick = null; $('confirm-cancel').onclick = null;
      resolve(ok);
    };
    $('confirm-ok').onclick = () => done(true);
    $('confirm-cancel').onclick = () => done(false);
  });
}

// ---- login -----------------------------------------------------------------

function showLogin(message) {
  $('login-error').textContent = message || '';
  $('login').classList.remove('hidden');
  $('login-user').focus();
  renderWho();
}

async function login(ev) {
  ev.preventDefault();
  const name = $('login-user').value, password = $('login-password').value;
  try {
    const resp = await gw('auth/authenticate', { name, password });
    session.token = resp.token; session.user = name;
    $('login-password').value = '';
    $('login').classList.add('hidden');
    renderWho();
    refreshActive();
  } catch (err) {
    $('login-error').textContent = err.message;
  }
}

function logout() {
  session.token = ''; session.user = '';
  stopWatch();
  showLogin('');
}

function renderWho() {
  const who = $('whoami');
  if (!session.authEnabled) { who.replaceChildren('auth disabled'); return; }
  if (!session.user || !session.token) { who.replaceChildren('not logged in'); return; }
  who.replaceChildren('user ', h('strong', { id: 'whoami-user' }, session.user), h('button', { type: 'button', onclick: logout }, 'Log out'));
}

async function detectAuth() {
  try {
    const st = await gw('auth/status', {});
    session.authEnabled = !!st.enabled;
  } catch (err) {
    session.authEnabled = /user name is empty|permission denied|token/.test(err.message);
  }
  renderWho();
  if (session.authEnabled && !session.token) showLogin('');
}

// ---- views and their refresh ------------------------------------------------

const views = {};
let activeView = '';
let refreshTimer = null;

function show(name) {
  if (!views[name]) name = 'cluster';
  activeView = name;
  document.querySelectorAll('.view').forEach(v => v.classList.toggle('active', v.id === 'view-' + name));
  document.querySelectorAll('#tabs a').forEach(a => a.classList.toggle('active', a.dataset.view === name));
  refreshActive();
}

function refreshActive() {
  clearTimeout(refreshTimer);
  const v = views[activeView];
  if (!v) return;
  if (session.authEnabled && !session.token) return;
  Promise.resolve(v.refresh && v.refresh()).catch(() => {}).finally(() => {
    if (v.live) refreshTimer = setTimeout(refreshActive, REFRESH_MS);
  });
}

// ---- Cluster ----------------------------------------------------------------

let lastCluster = null;

function healthBadge(m) {
  if (m.tokenRefused) return h('span', { class: 'badge warn health' }, 'token refused');
  if (!m.reachable) return h('span', { class: 'badge bad health' }, 'unreachable');
  if (!m.healthy) return h('span', { class: 'badge warn health' }, 'unhealthy');
  return h('span', { class: 'badge ok health' }, 'healthy');
}

function progressCell(m, cl) {
  const parts = [];
  if (m.progress) {
    const p = m.progress;
    parts.push(h('div', {}, `match ${p.match} · next ${p.next}`));
    parts.push(h('div', {}, `${p.state.replace('State', '').toLowerCase()} · inflight ${p.inflight}` + (p.recentActive ? '' : ' · inactive') + (p.paused ? ' · paused' : '')));
  } else {
    parts.push(h('span', { class: 'hint' }, '–'));
  }
  if (m.catchUp) {
    const c = m.catchUp, bar = h('div', { class: 'bar', title: `promotable at ${c.threshold}%` }, h('span'), h('i'));
    bar.firstChild.style.width = c.percent.toFixed(1) + '%';
    bar.lastChild.style.left = c.threshold + '%';
    parts.push(h('div', {}, `learner caught up ${c.percent.toFixed(1)}% (promotable at ${c.threshold}%)` + (c.ready ? ' ✓' : ''), bar));
  }
  return h('td', {}, parts);
}

function memberRow(m, cl) {
  const role = h('span', { class: 'badge role ' + m.role }, m.role);
  return h('tr', { class: 'member' + (m.reachable ? '' : ' down'), 'data-name': m.name, 'data-role': m.role },
    h('td', {}, h('strong', {}, m.name || '(unstarted)'), m.self ? h('span', { class: 'hint' }, ' (this member)') : null),
    h('td', { class: 'mono' }, m.idHex),
    h('td', {}, role),
    h('td', { class: 'health-cell' }, healthBadge(m), m.error ? h('div', { class: 'hint', title: m.error }, m.error) : null),
    h('td', {}, m.term ? String(m.term) : '–'),
    h('td', {}, m.index ? String(m.index) : '–'),
    h('td', {}, m.index ? `${m.appliedIndex} (${m.applyLag})` : '–'),
    h('td', {}, m.dbSize ? `${humanBytes(m.dbSize)} / ${humanBytes(m.dbSizeInUse)}` : '–'),
    h('td', {}, m.version || '–'),
    h('td', {}, m.alarms.length ? m.alarms.map(a => h('span', { class: 'badge bad' }, a)) : '–'),
    progressCell(m, cl),
    h('td', { class: 'mono' }, (m.clientURLs || []).join(' ')));
}

views.cluster = {
  live: true,
  async refresh() {
    try {
      const cl = await ui('cluster');
      lastCluster = cl;
      fill($('members').tBodies[0], cl.members.map(m => memberRow(m, cl)));
      const leader = cl.members.find(m => m.role === 'leader');
      $('cluster-summary').textContent = `${cl.members.length} members · leader ${leader ? leader.name : 'none'} · term ${cl.raftTerm} · revision ${cl.revision}`;
      $('cluster-note').textContent = cl.fromLeader ? 'Raft progress is this leader\'s live view of each member.' :
        'Raft progress is known only on the leader' + (leader && leader.clientURLs.length ? ': open ' + leader.clientURLs[0] + '/ui/' : '.');
      $('banner').classList.add('hidden');
    } catch (err) {
      $('banner').textContent = 'Cannot read the cluster from this member: ' + err.message;
      $('banner').classList.remove('hidden');
      throw err;
    }
  },
};

// ---- Graphs -----------------------------------------------------------------

const charts = [
  { key: 'writesPerSec', title: 'writes/s', fmt: v => v.toFixed(1) },
  { key: 'readsPerSec', title: 'reads/s', fmt: v => v.toFixed(1) },
  { key: 'watchEventsPerSec', title: 'watch events/s', fmt: v => v.toFixed(1) },
  { key: 'walFsyncP99', title: 'WAL fsync p99', fmt: v => (v * 1000).toFixed(1) + ' ms' },
  { key: 'backendCommitP99', title: 'backend commit p99', fmt: v => (v * 1000).toFixed(1) + ' ms' },
  { key: 'proposalsPending', title: 'proposals pending', fmt: v => v.toFixed(0) },
  { key: 'proposalsFailed', title: 'proposals failed (total)', fmt: v => v.toFixed(0) },
  { key: 'dbSize', title: 'db size', fmt: humanBytes },
  { key: 'leaderChanges', title: 'leader changes (total)', fmt: v => v.toFixed(0) },
];

function setupCharts() {
  $('charts').replaceChildren(...charts.map(c => {
    c.now = h('span', { class: 'now' }, '–');
    c.canvas = h('canvas', { width: 330, height: 110, 'data-metric': c.key });
    return h('div', { class: 'chart' }, h('div', { class: 'title' }, h('span', {}, c.title), c.now), c.canvas);
  }));
}

// spanLabel names how far back the x axis reaches.
function spanLabel(ms) {
  return ms >= 60000 ? '-' + Math.round(ms / 60000) + ' min' : '-' + Math.round(ms / 1000) + ' s';
}

// drawChart draws one metric: the x axis reaches back to the oldest point
// (at least a minute, at most ten), the y axis from 0 to the largest value.
function drawChart(c, points) {
  const cv = c.canvas, dpr = window.devicePixelRatio || 1;
  const wCss = cv.clientWidth || 330, hCss = cv.clientHeight || 110;
  cv.width = wCss * dpr; cv.height = hCss * dpr;
  const g = cv.getContext('2d');
  g.scale(dpr, dpr);
  g.clearRect(0, 0, wCss, hCss);
  const left = 52, bottom = hCss - 16, top = 8, right = wCss - 6;
  const vals = points.map(p => num(p[c.key]));
  let max = Math.max(...vals, 0);
  if (max === 0) max = 1;
  g.strokeStyle = '#e3e7ee'; g.fillStyle = '#6b7585'; g.font = '10px system-ui, sans-serif'; g.lineWidth = 1;
  for (const [frac, label] of [[0, c.fmt(max)], [1, c.fmt(0)]]) {
    const y = top + (bottom - top) * frac;
    g.beginPath(); g.moveTo(left, y); g.lineTo(right, y); g.stroke();
    g.fillText(label, 2, y + 3);
  }
  const now = Date.now();
  const span = points.length ? Math.min(10 * 60000, Math.max(60000, now - points[0].t)) : 10 * 60000;
  g.fillText(spanLabel(span), left, hCss - 3);
  g.fillText('now', right - 18, hCss - 3);
  if (points.length === 0) { g.fillText('collecting…', left + 8, top + 30); return; }
  const x = t => left + (right - left) * (1 - Math.min(span, Math.max(0, now - t)) / span);
  const y = v => bottom - (bottom - top) * v / max;
  g.beginPath();
  points.forEach((p, i) => { const px = x(p.t), py = y(num(p[c.key])); i ? g.lineTo(px, py) : g.moveTo(px, py); });
  g.strokeStyle = '#2f6fde'; g.lineWidth = 1.5; g.stroke();
  g.lineTo(x(points[points.length - 1].t), bottom); g.lineTo(x(points[0].t), bottom); g.closePath();
  g.fillStyle = 'rgba(47,111,222,.12)'; g.fill();
  if (points.length < 40) {
    g.fillStyle = '#2f6fde';
    for (const p of points) { g.beginPath(); g.arc(x(p.t), y(num(p[c.key])), 2, 0, 2 * Math.PI); g.fill(); }
  }
}

views.graphs = {
  live: true,
  async refresh() {
    const m = await ui('metrics');
    for (const c of charts) {
      const last = m.points[m.points.length - 1];
      c.now.textContent = last ? c.fmt(num(last[c.key])) : '–';
      drawChart(c, m.points);
    }
  },
};

// ---- Keys -------------------------------------------------------------------

const keysState = { prefix: new Uint8Array(0), pageStarts: [], start: null, nextStart: null, selected: null, valueMode: 'text' };

function keyRange(prefix) {
  return prefix.length ? prefixEnd(prefix) : Uint8Array.of(0);
}

async function listKeys() {
  const limit = Number($('keys-limit').value);
  const start = keysState.start || (keysState.prefix.length ? keysState.prefix : Uint8Array.of(0));
  const end = keyRange(keysState.prefix);
  const resp = await gw('kv/range', { key: bytesToB64(start), range_end: bytesToB64(end), limit: limit, keys_only: true, sort_order: 'ASCEND', sort_target: 'KEY' });
  const kvs = resp.kvs || [];
  fill($('keys-table').tBodies[0], kvs.map(kv => {
    const row = h('tr', { class: 'clickable key-row', 'data-key': b64ToText(kv.key), onclick: () => selectKey(kv.key, row) },
      h('td', { class: 'mono' }, b64ToText(kv.key)), h('td', {}, String(num(kv.mod_revision))), h('td', {}, String(num(kv.version))));
    return row;
  }));
  // The next page starts right after the last key shown.
  if (resp.more && kvs.length) {
    const last = b64ToBytes(kvs[kvs.length - 1].key);
    const next = new Uint8Array(last.length + 1); next.set(last);
    keysState.nextStart = next;
  } else keysState.nextStart = null;
  $('keys-next').disabled = !keysState.nextStart;
  $('keys-prev').disabled = keysState.pageStarts.length === 0;
  $('keys-count').textContent = kvs.length ? `${kvs.length} shown` + (resp.more ? `, ${num(resp.count) - kvs.length} more after this page (revision ${resp.header.revision})` : ` (revision ${resp.header.revision})`) : 'no keys under this prefix';
}

async function keysSubmit(ev) {
  ev.preventDefault();
  keysState.prefix = enc.encode($('keys-prefix').value);
  keysState.start = null; keysState.pageStarts = [];
  fill($('keys-table').tBodies[0], [h('tr', {}, h('td', { colspan: 3, class: 'hint' }, 'loading…'))]);
  try { await listKeys(); } catch (err) { fill($('keys-table').tBodies[0], [h('tr', {}, h('td', { colspan: 3, class: 'error' }, err.message))]); $('keys-count').textContent = ''; }
}

async function keysPage(dir) {
  if (dir > 0 && keysState.nextStart) { keysState.pageStarts.push(keysState.start); keysState.start = keysState.nextStart; }
  if (dir < 0 && keysState.pageStarts.length) keysState.start = keysState.pageStarts.pop();
  try { await listKeys(); } catch (err) { $('keys-count').textContent = err.message; }
}

function renderValue(bytes) {
  const mode = keysState.valueMode;
  if (mode === 'hex') return hexDump(bytes);
  const text = bytesToText(bytes);
  if (mode === 'json') {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return '(not JSON: ' + e.message + ')\n' + text; }
  }
  return text;
}

async function selectKey(keyB64, row) {
  document.querySelectorAll('#keys-table tr.selected').forEach(r => r.classList.remove('selected'));
  if (row) row.classList.add('selected');
  keysState.selected = keyB64;
  const panel = $('key-detail');
  try {
    const resp = await gw('kv/range', { key: keyB64 });
    const kv = (resp.kvs || [])[0];
    if (!kv) { panel.replaceChildren(h('p', { class: 'hint' }, 'The key no longer exists.')); return; }
    const bytes = b64ToBytes(kv.value);
    const pre = h('pre', { class: 'value', id: 'key-value' }, renderValue(bytes));
    const modeBtn = (m, label) => h('button', { type: 'button', class: keysState.valueMode === m ? 'on' : '', onclick: () => { keysState.valueMode = m; selectKey(keyB64, row); } }, label);
    const history = h('div', { id: 'key-history' });
    panel.replaceChildren(
      h('h3', { class: 'mono' }, b64ToText(kv.key)),
      h('dl', { class: 'meta' },
        h('dt', {}, 'create revision'), h('dd', {}, String(num(kv.create_revision))),
        h('dt', {}, 'mod revision'), h('dd', {}, String(num(kv.mod_revision))),
        h('dt', {}, 'version'), h('dd', {}, String(num(kv.version))),
        h('dt', {}, 'lease'), h('dd', {}, kv.lease ? kv.lease + ' (0x' + BigInt(kv.lease).toString(16) + ')' : 'none'),
        h('dt', {}, 'size'), h('dd', {}, humanBytes(bytes.length))),
      h('div', { class: 'row tabs' }, modeBtn('text', 'text'), modeBtn('json', 'JSON'), modeBtn('hex', 'hex'),
        h('button', { type: 'button', onclick: () => loadHistory(keyB64, history) }, 'History'),
        h('button', { type: 'button', class: 'danger', id: 'key-delete', onclick: () => deleteKey(keyB64) }, 'Delete…')),
      pre, history);
  } catch (err) { showError(panel, err); }
}

async function loadHistory(keyB64, el) {
  el.replaceChildren(h('p', { class: 'hint' }, 'reading history…'));
  try {
    const hv = await ui('history?key=' + encodeURIComponent(keyB64));
    const rows = hv.versions.map(v => h('tr', {},
      h('td', {}, String(v.modRevision)), h('td', {}, v.type),
      h('td', {}, v.type === 'PUT' ? String(v.version) : ''),
      h('td', { class: 'mono' }, v.type === 'PUT' ? b64ToText(v.value) : '')));
    el.replaceChildren(
      h('h3', {}, 'History'),
      h('p', { class: 'hint' }, hv.compactRevision ? `compacted at revision ${hv.compactRevision}: older versions are gone` : 'complete (never compacted)', hv.truncated ? ' · only the newest 200 shown' : ''),
      h('table', { class: 'grid' }, h('thead', {}, h('tr', {}, h('th', {}, 'mod rev'), h('th', {}, 'change'), h('th', {}, 'ver'), h('th', {}, 'value'))), h('tbody', {}, rows)));
  } catch (err) { showError(el, err); }
}

async function deleteKey(keyB64) {
  const name = b64ToText(keyB64);
  if (!await confirmAction('Delete key', `Delete the key "${name}" from the cluster? Its history stays readable until the next compaction.`, 'Delete')) return;
  try {
    await gw('kv/deleterange', { key: keyB64 });
    $('key-detail').replaceChildren(h('p', {}, `Deleted "${name}".`));
    await listKeys();
  } catch (err) { showError($('key-detail'), err); }
}

async function putSubmit(ev) {
  ev.preventDefault();
  const key = $('put-key').value, value = $('put-value').value, lease = $('put-lease').value.trim();
  if (!key) return;
  const text = `Write "${value}" to the key "${key}"` + (lease ? ` attached to lease ${lease}` : '') + '? An existing value is replaced (its old version stays in the history).';
  if (!await confirmAction('Put key', text, 'Put')) return;
  try {
    const body = { key: strToB64(key), value: strToB64(value) };
    if (lease) body.lease = lease;
    await gw('kv/put', body);
    $('put-value').value = '';
    await listKeys().catch(() => {});
    selectKey(strToB64(key), null);
  } catch (err) { showError($('key-detail'), err); }
}

views.keys = { live: false, refresh() { return listKeys().catch(err => { $('keys-count').textContent = err.message; }); } };

// ---- Watch ------------------------------------------------------------------

// The tail follows one watch stream through the gateway. Pausing cancels
// the stream; resuming, or a stream broken by a member restart, watches
// again from the revision after the last one shown, so nothing is lost or
// shown twice.
const watchState = { running: false, paused: false, nextRev: 0, abort: null, key: null, end: null, retry: null };
const WATCH_ROWS = 500;

function setWatchState(text) { $('watch-state').textContent = text; }

function startWatch(ev) {
  ev.preventDefault();
  if (watchState.running) { stopWatch(); return; }
  const keyBytes = enc.encode($('watch-key').value);
  watchState.key = keyBytes;
  watchState.end = $('watch-prefix').checked ? keyRange(keyBytes) : null;
  const rev = $('watch-rev').value.trim();
  watchState.nextRev = rev ? Number(rev) : 0;
  watchState.running = true; watchState.paused = false;
  $('watch-start').textContent = 'Stop';
  $('watch-pause').disabled = false; $('watch-pause').textContent = 'Pause';
  openWatch();
}

function stopWatch() {
  watchState.running = false; watchState.paused = false;
  clearTimeout(watchState.retry);
  if (watchState.abort) watchState.abort.abort();
  $('watch-start').textContent = 'Start';
  $('watch-pause').disabled = true;
  setWatchState('not watching');
}

function togglePause() {
  if (!watchState.running) return;
  watchState.paused = !watchState.paused;
  $('watch-pause').textContent = watchState.paused ? 'Resume' : 'Pause';
  if (watchState.paused) {
    if (watchState.abort) watchState.abort.abort();
    setWatchState(`paused; resumes from revision ${watchState.nextRev}`);
  } else openWatch();
}

async function openWatch() {
  clearTimeout(watchState.retry);
  const ctl = new AbortController();
  watchState.abort = ctl;
  const create = { key: bytesToB64(watchState.key.length ? watchState.key : Uint8Array.of(0)) };
  if (watchState.end) create.range_end = bytesToB64(watchState.end);
  else if (!watchState.key.length) create.range_end = bytesToB64(Uint8Array.of(0));
  if (watchState.nextRev > 0) create.start_revision = String(watchState.nextRev);
  try {
    const resp = await fetch('/v3/watch', { method: 'POST', headers: authHeaders({ 'Content-Type': 'application/json' }), body: JSON.stringify({ create_request: create }), signal: ctl.signal });
    if (!resp.ok) { await parseAnswer(resp); }
    const reader = resp.body.getReader();
    const td = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += td.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim(); buf = buf.slice(nl + 1);
        if (line) handleWatchMessage(JSON.parse(line), create);
      }
    }
    throw new Error('the stream ended');
  } catch (err) {
    if (ctl.signal.aborted || !watchState.running || watchState.paused) return;
    if (err instanceof APIError && err.status < 500 && err.status !== 404 && !/unavailable|stopped/i.test(err.message)) {
      setWatchState('watch refused: ' + err.message);
      stopWatch(); setWatchState('watch refused: ' + err.message);
      return;
    }
    setWatchState(`disconnected (${err.message}); retrying from revision ${watchState.nextRev || 'now'}…`);
    watchState.retry = setTimeout(() => { if (watchState.running && !watchState.paused) openWatch(); }, 1000);
  }
}

function handleWatchMessage(msg, create) {
  if (msg.error) throw new APIError(500, msg.error.grpc_code || msg.error.code, msg.error.message);
  const r = msg.result || {};
  if (r.compact_revision && num(r.compact_revision) > 0) {
    throw new APIError(400, 11, `revision ${watchState.nextRev} is compacted; the oldest kept is ${r.compact_revision}`);
  }
  if (r.canceled) throw new APIError(400, 0, r.cancel_reason || 'watch canceled');
  if (r.created) {
    if (!create.start_revision && r.header) watchState.nextRev = num(r.header.revision) + 1;
    setWatchState(`watching from revision ${watchState.nextRev}`);
    return;
  }
  const tbody = $('watch-events').tBodies[0];
  for (const ev of r.events || []) {
    const kv = ev.kv || {};
    const rev = num(kv.mod_revision);
    if (rev < watchState.nextRev) continue; // already shown before a reconnect
    watchState.nextRev = rev + 1;
    const type = ev.type || 'PUT';
    tbody.insertBefore(h('tr', { class: 'watch-event', 'data-key': b64ToText(kv.key) },
      h('td', {}, String(rev)), h('td', {}, type), h('td', { class: 'mono' }, b64ToText(kv.key)),
      h('td', { class: 'mono' }, type === 'PUT' ? b64ToText(kv.value) : '')), tbody.firstChild);
    while (tbody.rows.length > WATCH_ROWS) tbody.deleteRow(-1);
  }
  setWatchState(`watching; next revision ${watchState.nextRev}`);
}

views.watch = { live: false };

// ---- Leases -----------------------------------------------------------------

const LEASES_SHOWN = 200;

views.leases = {
  live: true,
  async refresh() {
    const tbody = $('leases-table').tBodies[0];
    try {
      const list = await gw('lease/leases', {});
      const ids = (list.leases || []).map(l => l.ID).slice(0, LEASES_SHOWN);
      const infos = await Promise.all(ids.map(id => gw('lease/timetolive', { ID: id, keys: true }).catch(err => ({ ID: id, error: err.message }))));
      fill(tbody, infos.length ? infos.map(leaseRow) : [h('tr', {}, h('td', { colspan: 5, class: 'hint' }, 'no leases'))]);
    } catch (err) { fill(tbody, [h('tr', {}, h('td', { colspan: 5, class: 'error' }, err.message))]); }
  },
};

function leaseRow(l) {
  const keys = (l.keys || []).map(b64ToText);
  return h('tr', { class: 'lease', 'data-id': l.ID },
    h('td', { class: 'mono' }, `${l.ID} (0x${BigInt(l.ID).toString(16)})`),
    h('td', {}, l.error ? h('span', { class: 'error' }, l.error) : `${num(l.TTL)} s`),
    h('td', {}, l.error ? '' : `${num(l.grantedTTL)} s`),
    h('td', { class: 'mono' }, keys.length ? keys.join(', ') : '–'),
    h('td', {}, h('button', { type: 'button', class: 'danger', onclick: () => revokeLease(l.ID, keys) }, 'Revoke…')));
}

async function revokeLease(id, keys) {
  const text = `Revoke lease ${id}? It ends at once and deletes the ${keys.length} key(s) attached to it` + (keys.length ? ': ' + keys.slice(0, 5).join(', ') + (keys.length > 5 ? ', …' : '') : '') + '.';
  if (!await confirmAction('Revoke lease', text, 'Revoke')) return;
  try { await gw('lease/revoke', { ID: id }); } catch (err) { alertBanner(err); }
  views.leases.refresh();
}

function alertBanner(err) {
  $('banner').textContent = err.message; $('banner').classList.remove('hidden');
  setTimeout(() => $('banner').classList.add('hidden'), 6000);
}

// ---- Auth -------------------------------------------------------------------

views.auth = {
  live: false,
  async refresh() {
    $('auth-status').replaceChildren(
      h('p', {}, session.authEnabled ? 'Authentication is enabled.' : 'Authentication is disabled: every request is allowed.'),
      session.user ? h('p', {}, 'Logged in as ', h('strong', {}, session.user), '. Everything this page does, it does with this user\'s permissions.') : null);
    const users = $('users-table').tBodies[0], roles = $('roles-table').tBodies[0];
    try {
      const ul = await gw('auth/user/list', {});
      const names = ul.users || [];
      const uinfo = await Promise.all(names.map(n => gw('auth/user/get', { name: n }).then(r => [n, r.roles || []])));
      fill(users, uinfo.map(([n, rs]) => h('tr', {}, h('td', {}, n), h('td', {}, rs.join(', ') || '–'))));
      const rl = await gw('auth/role/list', {});
      const rinfo = await Promise.all((rl.roles || []).map(r => gw('auth/role/get', { role: r }).then(x => [r, x.perm || []])));
      fill(roles, rinfo.map(([r, perms]) => h('tr', {}, h('td', {}, r), h('td', { class: 'mono' }, perms.length ? perms.map(permText).join('\n') : (r === 'root' ? 'everything' : '–')))));
      $('auth-note').textContent = '';
    } catch (err) {
      fill(users, []); fill(roles, []);
      $('auth-note').textContent = 'Users and roles are listed for root only (' + err.message + ').';
    }
  },
};

function permText(p) {
  const key = b64ToBytes(p.key), end = p.range_end ? b64ToBytes(p.range_end) : null;
  let what = JSON.stringify(bytesToText(key));
  if (end) {
    const pe = prefixEnd(key);
    what = (end.length === pe.length && end.every((b, i) => b === pe[i])) ? 'prefix ' + what : `[${what}, ${JSON.stringify(bytesToText(end))})`;
  }
  return `${p.permType || 'READ'} ${what}`;
}

// ---- Maintenance --------------------------------------------------------------

views.maintenance = {
  live: false,
  async refresh() {
    try {
      const cl = await ui('cluster');
      lastCluster = cl;
      if (!$('compact-rev').value) $('compact-rev').value = String(cl.revision);
      const targets = cl.members.filter(m => m.role === 'follower');
      $('move-target').replaceChildren(...targets.map(m => h('option', { value: m.id }, `${m.name} (${m.idHex})`)));
      const al = await gw('maintenance/alarm', { action: 'GET' });
      const byID = Object.fromEntries(cl.members.map(m => [m.id, m.name]));
      fill($('alarms-table').tBodies[0], (al.alarms || []).length ? al.alarms.map(a => h('tr', {},
        h('td', {}, byID[a.memberID] || a.memberID), h('td', {}, a.alarm || 'NONE'),
        h('td', {}, h('button', { type: 'button', onclick: () => disarm(a) }, 'Disarm…')))) :
        [h('tr', {}, h('td', { colspan: 3, class: 'hint' }, 'no alarms'))]);
    } catch (err) { showError($('alarm-out'), err); }
  },
};

async function compact() {
  const rev = $('compact-rev').value.trim(), out = $('compact-out');
  const text = `Compact the cluster's history at revision ${rev}: every version of every key older than revision ${rev} is discarded on all members, and reads or watches at older revisions fail from then on. This cannot be undone.`;
  if (!await confirmAction('Compact', text, 'Compact')) return;
  try { await gw('kv/compaction', { revision: rev, physical: true }); showOK(out, `compacted at revision ${rev}`); } catch (err) { showError(out, err); }
}

async function defrag() {
  const out = $('defrag-out');
  const self = lastCluster && lastCluster.members.find(m => m.self);
  const text = `Defragment ${self ? self.name : 'this member'}: its database file is rewritten to give free pages back to the file system. While it runs (seconds, minutes on a large database) this member answers no reads or writes; the other members are not touched.`;
  if (!await confirmAction('Defragment', text, 'Defragment')) return;
  const before = self ? self.dbSize : 0, started = Date.now();
  const tick = setInterval(() => showOK(out, `defragmenting… ${((Date.now() - started) / 1000).toFixed(0)} s (database ${humanBytes(before)} before)`), 250);
  try {
    await gw('maintenance/defragment', {});
    clearInterval(tick);
    const cl = await ui('cluster'); const now = cl.members.find(m => m.self);
    showOK(out, `done in ${((Date.now() - started) / 1000).toFixed(1)} s: ${humanBytes(before)} → ${humanBytes(now ? now.dbSize : 0)}`);
  } catch (err) { clearInterval(tick); showError(out, err); }
}

async function snapshot() {
  const out = $('snapshot-out');
  if (!await confirmAction('Download snapshot', 'Stream a consistent copy of this member\'s whole database to your browser as a file (restore it with cairnutl snapshot restore). The member keeps serving while it is sent.', 'Download')) return;
  try {
    const resp = await fetch('/ui/api/snapshot', { method: 'POST', headers: authHeaders() });
    if (!resp.ok) await parseAnswer(resp);
    const reader = resp.body.getReader(), chunks = [];
    let got = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      chunks.push(value); got += value.length;
      showOK(out, `received ${humanBytes(got)}…`);
    }
    const name = (/filename="([^"]+)"/.exec(resp.headers.get('Content-Disposition') || '') || [])[1] || 'snapshot.db';
    const a = h('a', { href: URL.createObjectURL(new Blob(chunks)), download: name });
    document.body.appendChild(a); a.click(); a.remove();
    showOK(out, `saved ${name} (${humanBytes(got)})`);
  } catch (err) { showError(out, err); }
}

async function moveLeader() {
  const out = $('move-out'), sel = $('move-target');
  if (!sel.value) { showOK(out, 'no follower to move the leadership to'); return; }
  const name = sel.options[sel.selectedIndex].textContent;
  if (!await confirmAction('Move leader', `Hand the leadership over to ${name}. Writes pause for about one election round while it takes over.`, 'Move')) return;
  try {
    const resp = await fetch('/ui/api/move-leader?target=' + encodeURIComponent(sel.value), { method: 'POST', headers: authHeaders() });
    await parseAnswer(resp);
    showOK(out, `${name} leads now`);
    views.maintenance.refresh();
  } catch (err) { showError(out, err); }
}

async function disarm(a) {
  const out = $('alarm-out');
  if (!await confirmAction('Disarm alarm', `Clear the ${a.alarm} alarm of member ${a.memberID}. The cluster accepts writes again; if the cause (a full database, corruption) is still there, the alarm comes back.`, 'Disarm')) return;
  try { await gw('maintenance/alarm', { action: 'DEACTIVATE', memberID: a.memberID, alarm: a.alarm }); showOK(out, 'disarmed'); views.maintenance.refresh(); }
  catch (err) { showError(out, err); }
}

// ---- start ------------------------------------------------------------------

function init() {
  setupCharts();
  $('login-form').addEventListener('submit', login);
  $('keys-form').addEventListener('submit', keysSubmit);
  $('keys-next').addEventListener('click', () => keysPage(1));
  $('keys-prev').addEventListener('click', () => keysPage(-1));
  $('put-form').addEventListener('submit', putSubmit);
  $('watch-form').addEventListener('submit', startWatch);
  $('watch-pause').addEventListener('click', togglePause);
  $('watch-clear').addEventListener('click', () => fill($('watch-events').tBodies[0], []));
  $('leases-refresh').addEventListener('click', () => views.leases.refresh());
  $('compact-btn').addEventListener('click', compact);
  $('defrag-btn').addEventListener('click', defrag);
  $('snapshot-btn').addEventListener('click', snapshot);
  $('move-btn').addEventListener('click', moveLeader);
  window.addEventListener('hashchange', () => show(location.hash.slice(1)));
  detectAuth().finally(() => show(location.hash.slice(1)));
}

document.addEventListener('DOMContentLoaded', init);
