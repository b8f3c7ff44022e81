// The Graphite page: targets (one a line) rendered through graphite-web's
// /render?format=json into the query page's chart, with completion of
// function names (from /functions) and metric paths (from /metrics/find).

import type uPlot from 'uplot';
import { getBare } from '../api';
import { MatrixSeries, newChart } from '../chart';
import { clear, errorBox, h } from '../dom';
import type { Page } from '../main';

interface Rendered { target: string; datapoints: [number | null, number][] }
interface Found { text: string; id: string; leaf: number }

// The word being typed at the cursor: a function name or a metric path.
const wordChars = /[A-Za-z0-9_.*\-{}\[\]]/;

function wordAt(s: string, pos: number): [number, string] {
  let i = pos;
  while (i > 0 && wordChars.test(s[i - 1])) i--;
  return [i, s.slice(i, pos)];
}

export const page: Page = {
  mount(root, params) {
    const ac = new AbortController();
    const targets = h('textarea', { class: 'targets', rows: 3, spellcheck: 'false', placeholder: 'one target a line, e.g. sumSeries(app.*.latency)', 'aria-label': 'targets' });
    targets.value = params.getAll('target').join('\n');
    const fromIn = h('input', { class: 'from', type: 'text', size: 14, value: params.get('from') ?? '-1h', 'aria-label': 'from' });
    const untilIn = h('input', { class: 'until', type: 'text', size: 14, value: params.get('until') ?? 'now', 'aria-label': 'until' });
    const run = h('button', { class: 'primary render', type: 'submit' }, 'Render');
    const suggest = h('ul', { class: 'suggest', hidden: true });
    const form = h('form', { class: 'graphite-form' },
      h('div', { class: 'target-box' }, targets, suggest),
      h('div', { class: 'controls' }, h('label', null, 'From ', fromIn), h('label', null, 'until ', untilIn), run,
        h('span', { class: 'hint' }, 'Times as graphite-web takes them: -1h, -7d, now, 20240101, Unix seconds. Tab or a click takes a suggestion.')));
    const output = h('div', { class: 'output' });
    clear(root, h('section', { class: 'graphite' }, form, output));

    let plot: uPlot | null = null;
    let functions: string[] = [];
    getBare<Record<string, unknown>>('/functions', undefined, ac.signal).then((f) => { functions = Object.keys(f).sort(); }, () => { /* completion without functions */ });

    let suggestGen = 0;
    // The list may be older than the text: a key typed while its fetch
    // was out. A pick therefore replaces the word at the caret now, and
    // Tab takes the first item that still extends that word.
    let items: string[] = [];
    function wordNow(): [number, number, string] {
      const pos = targets.selectionStart ?? targets.value.length;
      const [start, word] = wordAt(targets.value, pos);
      return [start, pos, word];
    }
    function pick(i: number): void {
      const text = items[i];
      if (text === undefined) return;
      const [start, pos] = wordNow();
      targets.setRangeText(text, start, pos, 'end');
      suggest.hidden = true;
      targets.focus();
      void complete();
    }
    async function complete(): Promise<void> {
      const g = ++suggestGen;
      const pos = targets.selectionStart ?? targets.value.length;
      const [, word] = wordAt(targets.value, pos);
      if (word === '') { suggest.hidden = true; return; }
      const fns = word.includes('.') ? [] : functions.filter((f) => f.startsWith(word)).slice(0, 10).map((f) => ({ text: f + '(', label: f + '(…)', kind: 'function' }));
      let paths: { text: string; label: string; kind: string }[] = [];
      try {
        const found = await getBare<Found[]>('/metrics/find', { query: word + '*' }, ac.signal);
        paths = found.slice(0, 20).map((f) => ({ text: f.id + (f.leaf ? '' : '.'), label: f.id + (f.leaf ? '' : '.'), kind: f.leaf ? 'metric' : 'node' }));
      } catch { /* no path completion */ }
      if (g !== suggestGen) return;
      const all = [...fns, ...paths];
      items = all.map((x) => x.text);
      clear(suggest, all.map((x, i) => h('li', { 'data-kind': x.kind, onmousedown: (e: Event) => { e.preventDefault(); pick(i); } }, x.label, ' ', h('span', { class: 'hint' }, x.kind))));
      suggest.hidden = all.length === 0;
    }
    targets.addEventListener('input', () => void complete());
    targets.addEventListener('blur', () => { suggest.hidden = true; });
    targets.addEventListener('keydown', (e) => {
      const first = e.key === 'Tab' && !suggest.hidden ? items.findIndex((x) => x.startsWith(wordNow()[2])) : -1;
      if (first >= 0) { e.preventDefault(); pick(first); }
      else if (e.key === 'Escape') suggest.hidden = true;
      else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); }
    });

    let gen = 0;
    async function render(push: boolean): Promise<void> {
      const ts = targets.value.split('\n').map((x) => x.trim()).filter((x) => x !== '');
      const from = fromIn.value.trim() || '-1h', until = untilIn.value.trim() || 'now';
      if (push) {
        const p = new URLSearchParams();
        for (const t of ts) p.append('target', t);
        p.set('from', from);
        p.set('until', until);
        history.pushState(null, '', '/graphite?' + p.toString());
      }
      const g = ++gen;
      plot?.destroy();
      plot = null;
      if (ts.length === 0) { clear(output, h('p', { class: 'hint' }, 'Type a target.')); return; }
      clear(output, h('p', { class: 'hint' }, 'Rendering…'));
      try {
        const data = await getBare<Rendered[]>('/render', { target: ts, from, until, format: 'json' }, ac.signal);
        if (g !== gen) return;
        if (data.length === 0) { clear(output, h('p', { class: 'hint' }, 'No series matched.')); return; }
        const series: MatrixSeries[] = data.map((d) => ({
          metric: { __name__: d.target },
          values: d.datapoints.map(([v, t]): [number, string] => [t, v === null ? 'NaN' : String(v)]),
        }));
        const times = data.flatMap((d) => d.datapoints.map(([, t]) => t));
        const start = Math.min(...times), end = Math.max(...times);
        const box = h('div', { class: 'chart', 'data-series': series.length, 'data-start': start, 'data-end': end });
        clear(output, h('p', { class: 'stats' }, `${series.length} series, ${times.length} points`), box);
        plot = newChart(box, series, {
          start, end, width: Math.max(output.clientWidth, 300),
          onZoom(a, b) {
            fromIn.value = String(Math.floor(a));
            untilIn.value = String(Math.ceil(b));
            void render(true);
          },
        });
      } catch (e) {
        if (!ac.signal.aborted && g === gen) clear(output, errorBox('GET /render', e));
      }
    }
    form.addEventListener('submit', (e) => { e.preventDefault(); suggest.hidden = true; void render(true); });
    const onResize = (): void => { plot?.setSize({ width: Math.max(output.clientWidth, 300), height: 320 }); };
    window.addEventListener('resize', onResize);
    void render(false);
    return () => { ac.abort(); window.removeEventListener('resize', onResize); plot?.destroy(); };
  },
};
