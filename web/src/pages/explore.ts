// The explore page: metric names with their series counts (status/tsdb, the
// cardinality view), a metric's series and labels, a series' head groups
// and blocks (status/aerie/series), links into the query page.

import { get } from '../api';
import { Child, clear, errorBox, formatLabels, h, link, table } from '../dom';
import type { Page } from '../main';
import { blocksTable, cut, seriesPath, SeriesStatus } from '../engine';

interface Stat { name: string; value: number }
interface TSDBStatus {
  headStats?: { numSeries?: number; numLabelPairs?: number; chunkCount?: number; minTime?: number; maxTime?: number };
  seriesCountByMetricName?: Stat[];
  labelValueCountByLabelName?: Stat[];
  memoryInBytesByLabelName?: Stat[];
  seriesCountByLabelValuePair?: Stat[];
}

const maxListed = 2000;

const legacyName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const legacyLabel = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

// selector writes a PromQL selector matching exactly these labels.
export function selector(metric: Record<string, string>): string {
  const name = metric.__name__ ?? '';
  const pairs: string[] = [];
  const nameOK = name !== '' && legacyName.test(name);
  if (name !== '' && !nameOK) pairs.push(JSON.stringify(name));
  for (const k of Object.keys(metric).sort()) {
    if (k === '__name__') continue;
    pairs.push(`${legacyLabel.test(k) ? k : JSON.stringify(k)}=${JSON.stringify(metric[k])}`);
  }
  if (nameOK && pairs.length === 0) return name;
  return `${nameOK ? name : ''}{${pairs.join(', ')}}`;
}

function queryLink(expr: string, text: Child = 'query'): HTMLAnchorElement {
  return link('/query?' + new URLSearchParams({ expr, tab: 'graph' }).toString(), text);
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => b[k] === a[k]);
}

// seriesCard shows a series' labels, the head groups it has slots in (the
// last is the one it writes to) with their series, and its blocks.
function seriesCard(st: SeriesStatus, pick: (s: Record<string, string>) => void): HTMLElement {
  const groups = st.groups.map((g, i) => h('div', { class: 'group', 'data-group': g.id },
    h('h4', null, `Group ${g.id} `, h('code', null, g.key), i === st.groups.length - 1 ? ' (writes here)' : ' (earlier)'),
    h('p', { class: 'hint' }, `${g.series} series · ${g.partitions} partitions · ${g.rows} rows in the head`),
    table(['Series in the group', ''], g.members.map((m) => [
      sameLabels(m, st.labels) ? h('strong', null, formatLabels(m)) : h('a', { href: '#', onclick: (e: Event) => { e.preventDefault(); pick(m); } }, formatLabels(m)),
      queryLink(selector(m))]), 'members'),
    g.members.length < g.series ? h('p', { class: 'hint' }, `Showing ${g.members.length} of ${g.series} series.`) : null));
  return h('div', { class: 'card series-detail', 'data-series': selector(st.labels) },
    h('h3', null, formatLabels(st.labels), ' ', h('span', { class: 'open-query' }, queryLink(selector(st.labels), 'open in query page'))),
    table(['Label', 'Value'], Object.keys(st.labels).sort().map((k) => [k, st.labels[k]]), 'kv'),
    h('h3', null, 'Head groups'),
    groups.length ? groups : h('p', { class: 'hint' }, 'The head holds no sample of this series.'),
    h('h3', null, 'Blocks'),
    st.blocks.list.length ? [blocksTable(st.blocks.list), cut(st.blocks, 'blocks')] : h('p', { class: 'hint' }, 'No block holds this series.'));
}

function statTable(title: string, stats: Stat[] | undefined, unit = ''): HTMLElement | null {
  if (!stats || stats.length === 0) return null;
  return h('div', { class: 'card' }, h('h3', null, title), table(['Name', 'Count'], stats.map((s) => [s.name, `${s.value}${unit}`])));
}

export const page: Page = {
  mount(root, params) {
    const ac = new AbortController();
    const filter = h('input', { class: 'filter', type: 'search', placeholder: 'filter metric names', 'aria-label': 'filter metric names' });
    const list = h('ul', { class: 'metrics' });
    const detail = h('div', { class: 'detail' });
    const summary = h('div', { class: 'summary' });
    clear(root, h('section', { class: 'explore' }, summary,
      h('div', { class: 'explore-body' }, h('div', { class: 'sidebar' }, filter, list), detail)));

    let names: string[] = [];
    const counts = new Map<string, number>();
    let selected = params.get('metric') ?? '';

    function renderList(): void {
      const f = filter.value.trim().toLowerCase();
      const matching = names.filter((n) => n.toLowerCase().includes(f));
      // A list of 100 000 names would stall the page: the filter narrows it.
      const shown = matching.slice(0, maxListed);
      clear(list, shown.map((n) => h('li', { class: n === selected ? 'active' : '' },
        h('a', { href: '/explore?metric=' + encodeURIComponent(n), 'data-metric': n, onclick: (e: Event) => { e.preventDefault(); select(n, true); } }, n),
        counts.has(n) ? h('span', { class: 'count', title: 'series in the head' }, String(counts.get(n))) : null)));
      if (shown.length === 0) list.append(h('li', { class: 'hint' }, names.length === 0 ? 'No metrics yet.' : 'No metric matches.'));
      if (matching.length > shown.length) list.append(h('li', { class: 'hint' }, `${matching.length - shown.length} more; type to filter.`));
    }
    filter.addEventListener('input', renderList);

    const seriesBox = h('div', { class: 'series-box' });

    async function showSeries(s: Record<string, string>, push: boolean): Promise<void> {
      const sel = selector(s);
      if (push) {
        params.set('series', sel);
        history.pushState(null, '', '/explore?' + new URLSearchParams({ metric: selected, series: sel }).toString());
      }
      clear(seriesBox, h('p', { class: 'hint' }, `Loading ${formatLabels(s)}…`));
      try {
        const resp = await get<{ total: number; list: SeriesStatus[] }>(seriesPath, { 'match[]': sel, limit: '50' }, ac.signal);
        const st = resp.data.list.find((x) => sameLabels(x.labels, s));
        clear(seriesBox, st ? seriesCard(st, (m) => void showSeries(m, true)) : h('p', { class: 'hint' }, `${formatLabels(s)} is gone.`));
        seriesBox.scrollIntoView?.({ block: 'nearest' });
      } catch (e) {
        if (!ac.signal.aborted) clear(seriesBox, errorBox('GET ' + seriesPath, e));
      }
    }

    async function select(name: string, push: boolean): Promise<void> {
      selected = name;
      if (push) params.delete('series');
      clear(seriesBox);
      if (push) history.pushState(null, '', '/explore?metric=' + encodeURIComponent(name));
      renderList();
      clear(detail, h('h2', null, name), h('p', { class: 'hint' }, 'Loading series…'));
      try {
        const resp = await get<Record<string, string>[]>('/api/v1/series', { 'match[]': selector({ __name__: name }) }, ac.signal);
        if (selected !== name) return;
        const series = resp.data;
        const labels = new Map<string, Set<string>>();
        for (const s of series) for (const [k, v] of Object.entries(s)) {
          if (k === '__name__') continue;
          if (!labels.has(k)) labels.set(k, new Set());
          labels.get(k)!.add(v);
        }
        const labelRows = [...labels.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, vs]): Child[] => {
          const sorted = [...vs].sort();
          const some: Child[] = sorted.slice(0, 8).map((v, i) => [i > 0 ? ', ' : '', queryLink(selector({ __name__: name, [k]: v }), v)]);
          return [k, String(vs.size), h('span', { class: 'label-values' }, some, sorted.length > 8 ? ', …' : '')];
        });
        clear(detail,
          h('h2', null, name, ' ', h('span', { class: 'open-query' }, queryLink(name, 'open in query page'))),
          h('p', null, `${series.length} series`),
          labelRows.length ? h('div', { class: 'card' }, h('h3', null, 'Labels'), table(['Label', 'Values', 'Some values'], labelRows)) : null,
          seriesBox,
          h('div', { class: 'card' }, h('h3', null, 'Series'),
            table(['Series', '', ''], series.slice(0, 1000).map((s) => [formatLabels(s),
              h('a', { href: '#', class: 'series-link', onclick: (e: Event) => { e.preventDefault(); void showSeries(s, true); } }, 'group and blocks'),
              queryLink(selector(s))]), 'series')),
          series.length > 1000 ? h('p', { class: 'hint' }, `Showing 1000 of ${series.length} series.`) : null);
        const want = params.get('series');
        const s = want ? series.find((x) => selector(x) === want) : undefined;
        if (s) void showSeries(s, false);
      } catch (e) {
        if (!ac.signal.aborted) clear(detail, h('h2', null, name), errorBox('GET /api/v1/series', e));
      }
    }

    async function load(): Promise<void> {
      const [namesR, tsdbR] = await Promise.allSettled([
        get<string[]>('/api/v1/label/__name__/values', undefined, ac.signal),
        get<TSDBStatus>('/api/v1/status/tsdb', { limit: '10000' }, ac.signal),
      ]);
      if (ac.signal.aborted) return;
      const parts: Child[] = [];
      if (tsdbR.status === 'fulfilled') {
        const d = tsdbR.value.data;
        for (const s of d.seriesCountByMetricName ?? []) counts.set(s.name, s.value);
        const hs = d.headStats;
        parts.push(h('div', { class: 'card head' }, h('h3', null, 'Head'),
          hs ? table(['Series', 'Label pairs', 'Chunks', 'From', 'To'], [[String(hs.numSeries ?? '—'), String(hs.numLabelPairs ?? '—'), hs.chunkCount !== undefined && hs.chunkCount >= 0 ? String(hs.chunkCount) : '—',
            hs.minTime !== undefined && hs.minTime > 0 && hs.minTime < 8.64e15 ? new Date(hs.minTime).toISOString() : '—',
            hs.maxTime !== undefined && hs.maxTime > 0 && hs.maxTime < 8.64e15 ? new Date(hs.maxTime).toISOString() : '—']]) : 'no head statistics'));
        parts.push(h('div', { class: 'cards' },
          statTable('Top label names by value count', d.labelValueCountByLabelName?.slice(0, 10)),
          statTable('Top label pairs by series count', d.seriesCountByLabelValuePair?.slice(0, 10)),
          statTable('Top label names by memory (bytes)', d.memoryInBytesByLabelName?.slice(0, 10))));
      } else {
        parts.push(errorBox('GET /api/v1/status/tsdb', tsdbR.reason));
      }
      clear(summary, parts);
      if (namesR.status === 'fulfilled') {
        names = namesR.value.data;
      } else {
        clear(list, h('li', null, errorBox('GET /api/v1/label/__name__/values', namesR.reason)));
        return;
      }
      renderList();
      if (selected !== '') void select(selected, false);
      else clear(detail, h('p', { class: 'hint' }, 'Pick a metric to see its series and labels.'));
    }
    void load();
    return () => ac.abort();
  },
};
