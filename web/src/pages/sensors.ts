// The sensor history page (docs/sensors.md): a value search with the
// condition grammar over /api/v1/sensor/search, the intervals found drawn
// as bands on an overview of the whole range, a click on an interval
// (band or list) zooms the main chart into it, and the zoomed range
// downloads as CSV, JSON or MessagePack through /api/v1/sensor/extract.

import uPlot from 'uplot';
import { apiURL, get } from '../api';
import { align, formatValue, MatrixSeries, newChart, seriesColor } from '../chart';
import { clear, errorBox, formatLabels, h, table } from '../dom';
import type { Page } from '../main';
import { formatDuration, formatTime } from '../time';

interface Interval { from: number; to: number } // ms, both ends included
interface Found { metric: Record<string, string>; intervals: Interval[] }
interface Rows { metric: Record<string, string>; rows?: { t: number; avg: number | string }[] }

const searchPath = '/api/v1/sensor/search';
const extractPath = '/api/v1/sensor/extract';
const overviewPoints = 600; // aggregation rows across the overview
const chartPoints = 800; // across the main chart; below, every point

// The state in the URL: the selector, the condition, the range (RFC 3339)
// and the zoom (ms, both ends included).
interface State { match: string; cond: string; start: string; end: string; from?: number; to?: number }

function stateOf(p: URLSearchParams): State {
  const end = p.get('end') || formatTime(Math.floor(Date.now() / 1000));
  const start = p.get('start') || formatTime(Date.parse(end) / 1000 - 30 * 86400);
  const num = (k: string): number | undefined => (p.get(k) !== null && Number.isFinite(Number(p.get(k))) ? Number(p.get(k)) : undefined);
  return { match: p.get('match') ?? '', cond: p.get('cond') ?? '', start, end, from: num('from'), to: num('to') };
}

function urlOf(s: State): string {
  const p = new URLSearchParams({ match: s.match, cond: s.cond, start: s.start, end: s.end });
  if (s.from !== undefined && s.to !== undefined) { p.set('from', String(s.from)); p.set('to', String(s.to)); }
  return '/sensors?' + p.toString();
}

// series fetches one aggregation row (the mean) per resolution over
// [from, to] ms, or every point when the range is short, as the chart's
// series.
async function series(match: string, from: number, to: number, points: number, signal: AbortSignal): Promise<MatrixSeries[]> {
  const res = Math.floor((to - from) / points);
  const params = res >= 1000
    ? { 'match[]': match, start: String(from / 1000), end: String(to / 1000), resolution: String(res / 1000), func: 'avg' }
    : { 'match[]': match, start: String(from / 1000), end: String(to / 1000), func: 'none' };
  const r = await get<(Rows & { points?: { t: number; v: number | string }[] })[]>(extractPath, params, signal);
  return r.data.map((s) => ({
    metric: s.metric,
    values: (s.rows ?? []).map((x): [number, string] => [x.t / 1000, String(x.avg)])
      .concat((s.points ?? []).map((x): [number, string] => [x.t / 1000, String(x.v)])),
  }));
}

// bands draws each interval as a translucent band across the plot.
function bandsPlugin(intervals: () => Interval[]): uPlot.Plugin {
  return {
    hooks: {
      drawClear: [(u) => {
        const ctx = u.ctx;
        ctx.save();
        ctx.fillStyle = 'rgba(214, 39, 40, 0.18)';
        for (const iv of intervals()) {
          const x0 = u.valToPos(iv.from / 1000, 'x', true);
          const x1 = u.valToPos((iv.to + 1) / 1000, 'x', true);
          ctx.fillRect(Math.min(x0, x1), u.bbox.top, Math.max(2, Math.abs(x1 - x0)), u.bbox.height);
        }
        ctx.restore();
      }],
    },
  };
}

export const page: Page = {
  mount(root, params) {
    const ac = new AbortController();
    let state = stateOf(params);
    const matchIn = h('input', { class: 'match', type: 'text', size: 40, placeholder: 'series selector, e.g. boiler_temp', value: state.match, 'aria-label': 'series selector' });
    const condIn = h('input', { class: 'cond', type: 'text', size: 40, placeholder: 'min lte 200 & max gte 50 | avg eq 75', value: state.cond, 'aria-label': 'condition' });
    const startIn = h('input', { class: 'start', type: 'text', size: 22, value: state.start, 'aria-label': 'start (RFC 3339)' });
    const endIn = h('input', { class: 'end', type: 'text', size: 22, value: state.end, 'aria-label': 'end (RFC 3339)' });
    const run = h('button', { class: 'primary search', type: 'submit' }, 'Search');
    const form = h('form', { class: 'controls sensor-form' },
      h('label', null, 'Series ', matchIn), h('label', null, 'Condition ', condIn),
      h('label', null, 'From ', startIn), h('label', null, 'to ', endIn), run);
    const messages = h('div', { class: 'messages' });
    const overview = h('div', { class: 'overview' });
    const found = h('div', { class: 'intervals' });
    const zoomed = h('div', { class: 'zoomed' });
    clear(root, h('section', { class: 'sensors' },
      h('p', { class: 'hint' }, 'Metrics: count, min, max, avg, sum, stddev, first, last; operators lt, lte, gt, gte, eq, ne; & binds tighter than |. Each interval is one metric interval (1 h by default), adjacent ones merged.'),
      form, messages, h('h3', null, 'Overview'), overview, found, h('h3', null, 'Chart'), zoomed));

    let intervals: Interval[] = [];
    let over: uPlot | null = null;
    let main: uPlot | null = null;
    let gen = 0; // of searches
    let mainGen = 0; // of main chart loads

    const range = (): [number, number] => [Date.parse(state.start), Date.parse(state.end)];

    function zoom(from: number, to: number, push = true): void {
      state = { ...state, from: Math.round(from), to: Math.round(to) };
      if (push) history.pushState(null, '', urlOf(state));
      void drawMain();
    }

    async function drawMain(): Promise<void> {
      const [s, e] = range();
      const from = state.from ?? s, to = state.to ?? e;
      const g = ++mainGen;
      main?.destroy();
      main = null;
      clear(zoomed, h('p', { class: 'hint' }, 'Loading…'));
      try {
        const ss = await series(state.match, from, to, chartPoints, ac.signal);
        if (g !== mainGen) return;
        clear(zoomed);
        const fmt = (f: string, label: string) => h('a', {
          href: apiURL(extractPath, { 'match[]': state.match, start: String(from / 1000), end: String(to / 1000), format: f }),
          download: `sensor-${from}-${to}.${f}`, class: 'download', 'data-format': f }, label);
        zoomed.append(h('div', { class: 'controls' },
          h('span', null, `${formatTime(from / 1000)} to ${formatTime(to / 1000)} (${formatDuration((to - from) / 1000)})`),
          h('span', null, 'Download every point: ', fmt('csv', 'CSV'), ' · ', fmt('json', 'JSON'), ' · ', fmt('msgp', 'MessagePack')),
          state.from !== undefined ? h('button', { type: 'button', class: 'reset', onclick: () => { state = { ...state, from: undefined, to: undefined }; history.pushState(null, '', urlOf(state)); void drawMain(); } }, 'whole range') : null));
        if (ss.every((x) => (x.values ?? []).length === 0)) {
          zoomed.append(h('p', { class: 'hint' }, 'No points in this range.'));
          return;
        }
        const box = h('div', { class: 'chart main-chart', 'data-series': ss.length, 'data-from': from, 'data-to': to });
        zoomed.append(box);
        main = newChart(box, ss, { start: from / 1000, end: to / 1000, width: Math.max(zoomed.clientWidth, 300), onZoom: (a, b) => zoom(a * 1000, b * 1000) });
      } catch (e) {
        if (!ac.signal.aborted && g === mainGen) clear(zoomed, errorBox('GET ' + extractPath, e));
      }
    }

    async function search(): Promise<void> {
      const g = ++gen;
      over?.destroy();
      over = null;
      intervals = [];
      clear(messages);
      clear(found);
      if (state.match.trim() === '') {
        clear(overview, h('p', { class: 'hint' }, 'Name a sensor (its metric name) or any series selector.'));
        clear(zoomed);
        return;
      }
      const [s, e] = range();
      if (!(s < e)) {
        clear(overview, errorBox('range', `start ${state.start} must be a time before end ${state.end} (RFC 3339)`));
        return;
      }
      clear(overview, h('p', { class: 'hint' }, 'Loading…'));
      const [sr, ov] = await Promise.allSettled([
        state.cond.trim() === '' ? Promise.resolve(null)
          : get<Found[]>(searchPath, { 'match[]': state.match, cond: state.cond, start: state.start, end: state.end }, ac.signal),
        series(state.match, s, e, overviewPoints, ac.signal),
      ]);
      if (g !== gen || ac.signal.aborted) return;
      let list: { metric: Record<string, string>; iv: Interval }[] = [];
      if (sr.status === 'rejected') messages.append(errorBox('GET ' + searchPath, sr.reason));
      else if (sr.value) {
        list = sr.value.data.flatMap((f) => f.intervals.map((iv) => ({ metric: f.metric, iv })));
        intervals = list.map((x) => x.iv);
        clear(found,
          h('p', { class: 'found', 'data-intervals': intervals.length }, `${intervals.length} intervals meet ${state.cond}`, list.length ? ' (click one to zoom into it):' : '.'),
          list.length ? table(['Series', 'From', 'To', 'Length', ''], list.slice(0, 1000).map(({ metric, iv }) => [
            formatLabels(metric), formatTime(iv.from / 1000), formatTime((iv.to + 1) / 1000), formatDuration((iv.to + 1 - iv.from) / 1000),
            h('button', { type: 'button', class: 'zoom', onclick: () => zoom(iv.from, iv.to) }, 'zoom')]), 'found-intervals') : null,
          list.length > 1000 ? h('p', { class: 'hint' }, `Listing 1000 of ${list.length}.`) : null);
      }
      if (ov.status === 'rejected') {
        clear(overview, errorBox('GET ' + extractPath, ov.reason));
      } else if (ov.value.every((x) => (x.values ?? []).length === 0)) {
        clear(overview, h('p', { class: 'hint' }, 'No points in this range.'));
      } else {
        clear(overview);
        const box = h('div', { class: 'chart overview-chart', 'data-series': ov.value.length, 'data-intervals': intervals.length });
        overview.append(box);
        over = new uPlot({
          width: Math.max(overview.clientWidth, 300), height: 140,
          series: [{}, ...ov.value.map((x, i): uPlot.Series => ({ label: formatLabels(x.metric), stroke: seriesColor(i), width: 1, value: (_u, v) => formatValue(v) }))],
          tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
          scales: { x: { time: true, min: s / 1000, max: e / 1000 } },
          axes: [{ stroke: '#555', grid: { stroke: '#eee' } }, { stroke: '#555', grid: { stroke: '#eee' }, size: 60, values: (_u, v) => v.map((x) => formatValue(x)) }],
          legend: { show: false },
          cursor: { drag: { x: true, y: false, setScale: false } },
          plugins: [bandsPlugin(() => intervals)],
          hooks: {
            setSelect: [(u) => {
              if (u.select.width < 3) return;
              const a = u.posToVal(u.select.left, 'x'), b = u.posToVal(u.select.left + u.select.width, 'x');
              u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
              zoom(a * 1000, b * 1000);
            }],
          },
        }, align(ov.value), box);
        // A click (not a drag) on a band zooms into its interval.
        over.over.addEventListener('click', (ev) => {
          if (!over) return;
          const r = over.over.getBoundingClientRect();
          const t = over.posToVal(ev.clientX - r.left, 'x') * 1000;
          const iv = intervals.find((x) => t >= x.from && t <= x.to + 1);
          if (iv) zoom(iv.from, iv.to);
        });
      }
      await drawMain();
    }

    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      state = { match: matchIn.value.trim(), cond: condIn.value.trim(), start: startIn.value.trim(), end: endIn.value.trim() };
      history.pushState(null, '', urlOf(state));
      void search();
    });
    const onResize = (): void => {
      over?.setSize({ width: Math.max(overview.clientWidth, 300), height: 140 });
      main?.setSize({ width: Math.max(zoomed.clientWidth, 300), height: 320 });
    };
    window.addEventListener('resize', onResize);
    void search();
    return () => {
      ac.abort();
      window.removeEventListener('resize', onResize);
      over?.destroy();
      main?.destroy();
    };
  },
};
