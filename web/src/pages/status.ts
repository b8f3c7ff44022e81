// The status page: whatever Aerie's API answers about itself. Each section
// asks its own endpoint and shows that endpoint's error if it fails, so a
// missing endpoint is visible rather than papered over.

import { get, getText } from '../api';
import { Child, clear, errorBox, formatBytes, formatLabels, h, table } from '../dom';
import { Family, parseMetrics } from '../metrics';
import { blocksTable, bytes, cut, Storage, storagePath, time } from '../engine';
import type { Page } from '../main';

type Render = (data: any) => Child;

function kv(obj: Record<string, unknown>): HTMLElement {
  return table(['Name', 'Value'], Object.keys(obj).sort().map((k) => [k, typeof obj[k] === 'object' ? JSON.stringify(obj[k]) : String(obj[k])]), 'kv');
}

function ago(iso: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t) || t <= 0) return 'never';
  const s = Math.max(0, (Date.now() - t) / 1000);
  return s < 60 ? `${s.toFixed(1)} s ago` : s < 3600 ? `${(s / 60).toFixed(1)} min ago` : `${(s / 3600).toFixed(1)} h ago`;
}

function health(hv: string): HTMLElement {
  return h('span', { class: 'health ' + (hv || 'unknown') }, hv || 'unknown');
}

const renderTargets: Render = (d: { activeTargets?: any[]; droppedTargets?: any[] }) => {
  const active = d.activeTargets ?? [];
  if (active.length === 0) return h('p', { class: 'hint' }, 'No active targets (no scrape_configs).');
  return [
    table(['Pool', 'Endpoint', 'Health', 'Labels', 'Last scrape', 'Duration', 'Error'], active.map((t) => [
      t.scrapePool, t.scrapeUrl, health(t.health), formatLabels(t.labels ?? {}), ago(t.lastScrape),
      t.lastScrapeDuration !== undefined ? `${(t.lastScrapeDuration * 1000).toFixed(1)} ms` : '', t.lastError ?? ''])),
    (d.droppedTargets?.length ?? 0) > 0 ? h('p', { class: 'hint' }, `${d.droppedTargets!.length} dropped targets.`) : null,
  ];
};

const renderRules: Render = (d: { groups?: any[] }) => {
  const groups = d.groups ?? [];
  if (groups.length === 0) return h('p', { class: 'hint' }, 'No rule groups.');
  return groups.map((g) => h('div', { class: 'group' },
    h('h3', null, `${g.name} `, h('span', { class: 'hint' }, `${g.file} · every ${g.interval} s · last ${ago(g.lastEvaluation)}`)),
    table(['Rule', 'Type', 'Expression', 'Health', 'Last evaluation', 'Error'], (g.rules ?? []).map((r: any) => [
      r.name, r.type, h('code', null, r.query), health(r.health), ago(r.lastEvaluation), r.lastError ?? '']))));
};

const renderAlerts: Render = (d: { alerts?: any[] }) => {
  const alerts = d.alerts ?? [];
  if (alerts.length === 0) return h('p', { class: 'hint' }, 'No alerts are pending or firing.');
  return table(['Alert', 'State', 'Since', 'Value'], alerts.map((a) => [formatLabels(a.labels ?? {}), a.state, a.activeAt ?? '', a.value ?? '']));
};

// headStats shows times as such, and a negative count (Aerie's head has no
// chunks in Prometheus' sense) as absent.
function headStats(hs: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(hs)) {
    if (typeof v === 'number' && v < 0) out[k] = '—';
    else if ((k === 'minTime' || k === 'maxTime') && typeof v === 'number' && Math.abs(v) < 8.64e15) out[k] = `${new Date(v).toISOString()} (${v})`;
    else out[k] = v;
  }
  return out;
}

const renderTSDB: Render = (d: { headStats?: Record<string, unknown>; seriesCountByMetricName?: { name: string; value: number }[] }) => [
  d.headStats ? kv(headStats(d.headStats)) : h('p', { class: 'hint' }, 'No head statistics.'),
  (d.seriesCountByMetricName?.length ?? 0) > 0
    ? [h('h3', null, 'Top metrics by series'), table(['Metric', 'Series'], d.seriesCountByMetricName!.map((s) => [s.name, String(s.value)]))]
    : null,
];

// The engine's counters, from its /metrics (rates and histograms that the
// status API's snapshot does not hold; the bucket tier).
const storageGroups: { title: string; prefixes: string[] }[] = [
  { title: 'Head', prefixes: ['aerie_head_', 'aerie_ingested_samples_total'] },
  { title: 'Flush', prefixes: ['aerie_flush_', 'aerie_flushes_total'] },
  { title: 'Memory manager', prefixes: ['aerie_memory_'] },
  { title: 'WAL', prefixes: ['aerie_wal_'] },
  { title: 'Blocks and compaction', prefixes: ['aerie_blocks', 'aerie_compaction', 'aerie_backfill_'] },
  { title: 'Bucket tier', prefixes: ['aerie_bucket_'] },
];

function formatMetric(name: string, v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (name.endsWith('_bytes') || name.endsWith('_bytes_total')) return `${formatBytes(v)} (${v})`;
  return String(Math.round(v * 1e6) / 1e6);
}

function familyRows(f: Family): Child[][] {
  if (f.type === 'histogram' || f.type === 'summary') {
    // Count and mean per label set, not every bucket.
    const counts = f.samples.filter((s) => s.name === f.name + '_count');
    return counts.map((c) => {
      const sum = f.samples.find((s) => s.name === f.name + '_sum' && s.labels === c.labels)?.value ?? NaN;
      const mean = c.value > 0 ? ` · mean ${(sum / c.value * (f.name.endsWith('_seconds') ? 1000 : 1)).toFixed(3)}${f.name.endsWith('_seconds') ? ' ms' : ''}` : '';
      return [h('span', { title: f.help }, f.name), c.labels, `${c.value} observed${mean}`];
    });
  }
  return f.samples.map((s) => [h('span', { title: f.help }, s.name), s.labels, formatMetric(s.name, s.value)]);
}

const renderStorage: Render = (text: string) => {
  const families = [...parseMetrics(text).values()];
  const out: Child[] = [];
  for (const g of storageGroups) {
    const rows = families
      .filter((f) => g.prefixes.some((p) => f.name.startsWith(p)))
      .sort((a, b) => a.name.localeCompare(b.name))
      .flatMap(familyRows);
    if (rows.length > 0) out.push(h('h3', null, g.title), table(['Metric', 'Labels', 'Value'], rows, 'metrics'));
  }
  return out.length > 0 ? out : h('p', { class: 'hint' }, 'No aerie_ storage metrics in /metrics.');
};

// The engine's lists, from Aerie's own status API.
const renderEngine: Render = (d: Storage) => {
  const hd = d.head;
  const f = d.flush;
  const m = d.memory;
  return [
    h('h3', null, 'Head'),
    table(['Series', 'Groups', 'Bytes', 'From', 'To'], [[String(hd.series), String(hd.groups.total), bytes(hd.bytes), time(hd.minTime), time(hd.maxTime)]], 'head'),
    h('h3', null, 'Partitions'),
    hd.partitions.length === 0 ? h('p', { class: 'hint' }, 'No partition in the head.')
      : table(['Partition', 'Start', 'End', 'First sample', 'Last sample', 'State', 'Memory area', 'Memory blocks'], hd.partitions.map((p) => [
        String(p.id), time(p.start), time(p.end), time(p.minSampleTime), time(p.maxSampleTime),
        p.flushed ? 'flushed (hot)' : 'open', p.area ?? '—', String(p.memoryBlocks)]), 'partitions'),
    h('p', null, 'Flush: ', f.running ? `running, ${f.groupsDone} of ${f.groupsTotal} groups` : 'idle', ` · ${f.flushes} flushes since start`),
    h('h3', null, 'Groups'),
    hd.groups.list.length === 0 ? h('p', { class: 'hint' }, 'No group.')
      : table(['Group', 'Key', 'Series', 'Partitions', 'Rows'], hd.groups.list.map((g) => [String(g.id), h('code', null, g.key), String(g.series), String(g.partitions), String(g.rows)]), 'groups'),
    cut(hd.groups, 'groups'),
    h('h3', null, 'Memory manager'),
    table(['Live', 'Hot', 'Cooling', 'Free', 'In use', 'Held', 'Limit', 'Pressure', 'Reclaimed', 'Epoch', 'Readers'], [[
      String(m.liveBlocks), String(m.hotBlocks), String(m.coolingBlocks), String(m.freeBlocks), bytes(m.inUseBytes), bytes(m.bytes),
      m.limitBytes > 0 ? bytes(m.limitBytes) : 'none', String(m.pressure), String(m.reclaimedBlocks), String(m.epoch), String(m.activeReaders)]], 'memory'),
    h('p', { class: 'hint' }, `Blocks of ${bytes(m.blockSize)} in pages of ${bytes(m.pageSize)}.`),
    h('h3', null, 'Blocks by level'),
    d.blocks.byLevel.length === 0 ? h('p', { class: 'hint' }, 'No block on disk yet: the head has not been flushed.')
      : table(['Level', 'Blocks', 'Samples', 'Size', 'B/sample'], [
        ...d.blocks.byLevel.map((l) => [String(l.level), String(l.blocks), String(l.samples), bytes(l.bytes), l.bytesPerSample.toFixed(2)]),
        ['all', String(d.blocks.blocks.total), String(d.blocks.samples), bytes(d.blocks.bytes), (d.blocks.bytes / Math.max(1, d.blocks.samples)).toFixed(2)]], 'levels'),
    d.blocks.blocks.list.length > 0 ? [h('h3', null, 'Blocks, newest first'), blocksTable(d.blocks.blocks.list), cut(d.blocks.blocks, 'blocks')] : null,
    h('h3', null, 'WAL'),
    table(['Segments', 'Files', 'Size'], [[d.wal.lastSegment > 0 ? `${d.wal.firstSegment}–${d.wal.lastSegment}` : 'none', String(d.wal.files), bytes(d.wal.bytes)]], 'wal'),
    h('h3', null, 'Quarantined blocks'),
    d.quarantined.list.length === 0 ? h('p', { class: 'hint' }, 'None.')
      : [h('ul', { class: 'quarantined' }, d.quarantined.list.map((q) => h('li', null, h('code', null, q)))), cut(d.quarantined, 'quarantined blocks')],
  ];
};

const sections: { id: string; title: string; path: string; render: Render; text?: boolean }[] = [
  { id: 'buildinfo', title: 'Build information', path: '/api/v1/status/buildinfo', render: kv },
  { id: 'runtimeinfo', title: 'Runtime information', path: '/api/v1/status/runtimeinfo', render: kv },
  { id: 'tsdb', title: 'Head statistics', path: '/api/v1/status/tsdb', render: renderTSDB },
  { id: 'engine', title: 'Storage engine', path: storagePath, render: renderEngine },
  { id: 'storage', title: 'Storage engine metrics', path: '/metrics', render: renderStorage, text: true },
  { id: 'targets', title: 'Targets', path: '/api/v1/targets', render: renderTargets },
  { id: 'rules', title: 'Rules', path: '/api/v1/rules', render: renderRules },
  { id: 'alerts', title: 'Alerts', path: '/api/v1/alerts', render: renderAlerts },
  { id: 'flags', title: 'Flags', path: '/api/v1/status/flags', render: kv },
  { id: 'config', title: 'Configuration', path: '/api/v1/status/config', render: (d: { yaml?: string }) => h('pre', { class: 'config' }, d.yaml ?? '') },
];

export const page: Page = {
  mount(root) {
    const ac = new AbortController();
    const toc = h('nav', { class: 'toc' }, sections.map((s) => h('a', { href: '#' + s.id }, s.title)));
    const boxes = sections.map((s) => {
      const body = h('div', { class: 'body' }, h('p', { class: 'hint' }, 'Loading…'));
      const box = h('section', { class: 'card status-section', id: s.id, 'data-state': 'loading' }, h('h2', null, s.title, ' ', h('code', { class: 'path' }, s.path)), body);
      const load = s.text ? getText(s.path, ac.signal) : get<unknown>(s.path, undefined, ac.signal).then((r) => r.data);
      load.then(
        (data) => { clear(body, s.render(data)); box.dataset.state = 'ok'; },
        (e) => { if (!ac.signal.aborted) { clear(body, errorBox(`GET ${s.path}`, e)); box.dataset.state = 'error'; } });
      return box;
    });
    clear(root, h('div', { class: 'status' }, toc, boxes));
    return () => ac.abort();
  },
};
