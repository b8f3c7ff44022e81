// The query page: editor, graph (range query) or table (instant query), the
// query's stats, and all of it in the URL: expr, tab, range, end, step.

import type uPlot from 'uplot';
import { APIError, get } from '../api';
import { MatrixSeries, newChart, seriesColor } from '../chart';
import { Child, clear, errorBox, formatLabels, h, table } from '../dom';
import { Editor, newEditor, parseErrorPosition } from '../editor';
import type { Page } from '../main';
import { formatDuration, formatTime, parseDuration, parseTime } from '../time';

type Tab = 'graph' | 'table';

interface State {
  expr: string;
  tab: Tab;
  range: number; // seconds
  end: number | null; // seconds; null is "now"
  step: number | null; // seconds; null is "auto"
}

const defaultRange = 3600;
const maxGraphSeries = 500;
const maxTableRows = 2000;

function readState(p: URLSearchParams): State {
  return {
    expr: p.get('expr') ?? '',
    tab: p.get('tab') === 'table' ? 'table' : 'graph',
    range: parseDuration(p.get('range') ?? '') ?? defaultRange,
    end: parseTime(p.get('end') ?? ''),
    step: parseDuration(p.get('step') ?? ''),
  };
}

function stateSearch(s: State): string {
  const p = new URLSearchParams();
  p.set('expr', s.expr);
  p.set('tab', s.tab);
  p.set('range', formatDuration(s.range));
  if (s.end !== null) p.set('end', formatTime(s.end));
  if (s.step !== null) p.set('step', formatDuration(s.step));
  return '?' + p.toString();
}

// Prometheus' default resolution: about 250 points across the range.
function autoStep(range: number): number {
  return Math.max(Math.floor(range / 250), 1);
}

interface Sample { metric: Record<string, string>; value?: [number, string]; histogram?: [number, { count: string; sum: string }]; values?: [number, string][] }
interface QueryData {
  resultType: 'matrix' | 'vector' | 'scalar' | 'string';
  result: Sample[] | [number, string];
  stats?: {
    timings?: Record<string, number>;
    samples?: { totalQueryableSamples?: number; peakSamples?: number };
  };
}

export const page: Page = {
  mount(root, params) {
    const state = readState(params);
    let abort: AbortController | null = null;
    let plot: uPlot | null = null;

    const rangeInput = h('input', { class: 'range', 'aria-label': 'range', size: 6, value: formatDuration(state.range) });
    const endInput = h('input', { class: 'end', 'aria-label': 'end', placeholder: 'now (UTC)', title: 'RFC 3339 (UTC) or Unix seconds; empty is now', size: 20, value: state.end === null ? '' : formatTime(state.end) });
    const stepInput = h('input', { class: 'step', 'aria-label': 'step', placeholder: 'auto', size: 6, value: state.step === null ? '' : formatDuration(state.step) });
    const tabs = (['graph', 'table'] as Tab[]).map((t) =>
      h('button', { type: 'button', class: 'tab', 'data-tab': t, onclick: () => { state.tab = t; execute(); } }, t === 'graph' ? 'Graph' : 'Table'));
    const graphOnly = h('span', { class: 'graph-controls' },
      h('button', { type: 'button', title: 'zoom out', onclick: () => { state.range *= 2; rangeInput.value = formatDuration(state.range); execute(); } }, '−'),
      rangeInput,
      h('button', { type: 'button', title: 'zoom in', onclick: () => { state.range = Math.max(state.range / 2, 1); rangeInput.value = formatDuration(state.range); execute(); } }, '+'),
      h('label', null, ' step ', stepInput));
    const editorBox = h('div', { class: 'editor' });
    const stats = h('div', { class: 'stats' });
    const messages = h('div', { class: 'messages' });
    const output = h('div', { class: 'output' });

    clear(root,
      h('section', { class: 'query' },
        h('div', { class: 'query-row' }, editorBox, h('button', { type: 'button', class: 'execute primary', onclick: () => execute() }, 'Execute')),
        h('div', { class: 'controls' }, h('span', { class: 'tabs' }, tabs), graphOnly, h('label', null, ' end ', endInput)),
        messages, stats, output));

    const editor: Editor = newEditor(editorBox, state.expr, () => execute());
    for (const input of [rangeInput, endInput, stepInput]) {
      input.addEventListener('keydown', (e) => { if (e.key === 'Enter') execute(); });
    }

    function readInputs(): string | null {
      const r = parseDuration(rangeInput.value);
      if (r === null) return `range ${JSON.stringify(rangeInput.value)}: want a duration such as 1h or 30m`;
      const end = endInput.value.trim() === '' ? null : parseTime(endInput.value);
      if (endInput.value.trim() !== '' && end === null) return `end ${JSON.stringify(endInput.value)}: want RFC 3339 (2026-01-02T15:04:05Z) or Unix seconds`;
      const step = stepInput.value.trim() === '' ? null : parseDuration(stepInput.value);
      if (stepInput.value.trim() !== '' && step === null) return `step ${JSON.stringify(stepInput.value)}: want a duration such as 15s`;
      state.range = r;
      state.end = end;
      state.step = step;
      return null;
    }

    function execute(): void {
      state.expr = editor.text();
      const bad = readInputs();
      if (bad !== null) {
        clear(messages, errorBox('Bad input', bad));
        return;
      }
      const search = stateSearch(state);
      if (search !== window.location.search) history.pushState(null, '', window.location.pathname + search);
      void run();
    }

    function showTabs(): void {
      for (const b of tabs) b.classList.toggle('active', b.dataset.tab === state.tab);
      graphOnly.hidden = state.tab !== 'graph';
    }

    async function run(): Promise<void> {
      showTabs();
      abort?.abort();
      editor.clearError();
      clear(messages);
      if (state.expr.trim() === '') {
        clear(stats);
        clear(output, h('p', { class: 'hint' }, 'Type a PromQL expression above and press Enter, or pick a metric on the ', h('a', { href: '/explore', 'data-route': true }, 'Explore'), ' page.'));
        return;
      }
      const ac = new AbortController();
      abort = ac;
      const end = state.end ?? Date.now() / 1000;
      const start = end - state.range;
      const step = state.step ?? autoStep(state.range);
      output.classList.add('loading');
      clear(stats, h('span', null, 'running…'));
      const t0 = performance.now();
      try {
        const resp = state.tab === 'graph'
          ? await get<QueryData>('/api/v1/query_range', { query: state.expr, start: start.toFixed(3), end: end.toFixed(3), step: String(step), stats: 'all' }, ac.signal)
          : await get<QueryData>('/api/v1/query', { query: state.expr, time: end.toFixed(3), stats: 'all' }, ac.signal);
        if (ac.signal.aborted) return;
        const ms = performance.now() - t0;
        for (const w of [...(resp.warnings ?? []), ...(resp.infos ?? [])]) messages.append(h('div', { class: 'warning' }, w));
        showStats(resp.data, ms);
        if (state.tab === 'graph') showGraph(resp.data, start, end, step);
        else showTable(resp.data);
      } catch (e) {
        if (ac.signal.aborted) return;
        clear(stats);
        clear(output);
        const msg = e instanceof Error ? e.message : String(e);
        const pos = parseErrorPosition(msg);
        if (pos) editor.markError(pos.line, pos.col);
        const what = e instanceof APIError && e.errorType ? `Error (${e.errorType})` : 'Error';
        clear(messages, h('div', { class: 'error query-error', role: 'alert', 'data-line': pos?.line, 'data-col': pos?.col },
          h('strong', null, what + ': '), msg));
      } finally {
        if (abort === ac) output.classList.remove('loading');
      }
    }

    function showStats(d: QueryData, ms: number): void {
      const parts: Child[] = [];
      const n = Array.isArray(d.result) && d.resultType !== 'scalar' && d.resultType !== 'string' ? (d.result as Sample[]).length : 1;
      parts.push(h('span', null, `${d.resultType}, ${n} series`));
      parts.push(h('span', null, `load ${ms.toFixed(0)} ms`));
      const t = d.stats?.timings;
      if (t?.evalTotalTime !== undefined) parts.push(h('span', null, `eval ${(t.evalTotalTime * 1000).toFixed(1)} ms`));
      const s = d.stats?.samples;
      if (s?.totalQueryableSamples !== undefined) parts.push(h('span', { class: 'samples-read' }, `${s.totalQueryableSamples} samples read`));
      if (s?.peakSamples !== undefined) parts.push(h('span', null, `peak ${s.peakSamples} samples`));
      clear(stats, parts);
    }

    function showGraph(d: QueryData, start: number, end: number, step: number): void {
      plot?.destroy();
      plot = null;
      clear(output);
      if (d.resultType !== 'matrix') {
        clear(output, h('p', null, `A ${d.resultType} cannot be graphed; see the table.`));
        return;
      }
      let series = d.result as MatrixSeries[];
      if (series.length === 0) {
        clear(output, h('p', { class: 'hint' }, 'No data in this range.'));
        return;
      }
      if (series.length > maxGraphSeries) {
        messages.append(h('div', { class: 'warning' }, `Showing the first ${maxGraphSeries} of ${series.length} series.`));
        series = series.slice(0, maxGraphSeries);
      }
      const box = h('div', { class: 'chart', 'data-series': series.length, 'data-start': start, 'data-end': end, 'data-step': step });
      output.append(box);
      plot = newChart(box, series, {
        start, end, width: Math.max(output.clientWidth, 300),
        onZoom(from, to) {
          // Whole seconds (milliseconds below a minute): URLs stay short.
          const unit = to - from >= 60 ? 1 : 1000;
          state.end = Math.round(to * unit) / unit;
          state.range = Math.max(Math.round((to - from) * unit) / unit, 1 / unit);
          state.step = null;
          rangeInput.value = formatDuration(state.range);
          endInput.value = formatTime(state.end);
          stepInput.value = '';
          execute();
        },
      });
    }

    function showTable(d: QueryData): void {
      plot?.destroy();
      plot = null;
      if (d.resultType === 'scalar' || d.resultType === 'string') {
        const [, v] = d.result as [number, string];
        clear(output, table(['Result', 'Value'], [[d.resultType, v]], 'result'));
        return;
      }
      const rows = d.result as Sample[];
      if (rows.length === 0) {
        clear(output, h('p', { class: 'hint' }, 'Empty result.'));
        return;
      }
      const cells = rows.slice(0, maxTableRows).map((s, i): Child[] => {
        let value: Child;
        if (s.value) value = s.value[1];
        else if (s.histogram) value = `histogram: count ${s.histogram[1].count}, sum ${s.histogram[1].sum}`;
        else value = h('div', { class: 'values' }, (s.values ?? []).map(([t, v]) => h('div', null, `${v} @${t}`)));
        return [h('span', { class: 'swatch', style: `background:${seriesColor(i)}` }), formatLabels(s.metric), value];
      });
      clear(output, table(['', 'Series', 'Value'], cells, 'result'));
      if (rows.length > maxTableRows) output.append(h('p', { class: 'hint' }, `Showing ${maxTableRows} of ${rows.length} rows.`));
    }

    const onResize = (): void => { if (plot) plot.setSize({ width: Math.max(output.clientWidth, 300), height: 320 }); };
    window.addEventListener('resize', onResize);
    showTabs();
    void run();
    editor.view.focus();

    return () => {
      abort?.abort();
      plot?.destroy();
      editor.view.destroy();
      window.removeEventListener('resize', onResize);
    };
  },
};
