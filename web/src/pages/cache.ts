// The cache page: each TSCache slab store the server runs (the results
// cache in front of query_range, cache="results"; the bucket tier's chunk
// cache, cache="chunks"), from the aerie_cache_* families of /metrics
// (internal/cache/metrics.go): hit ratios, bytes in and out, and the
// slabs by partition (FIFO, LRU and the LRU's auto-tuned target).

import { getText } from '../api';
import { clear, errorBox, formatBytes, h, table } from '../dom';
import type { Page } from '../main';
import { parseMetrics } from '../metrics';

// byCache reads aerie_cache_NAME{cache="C"} into C → NAME → value.
export function byCache(text: string): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const f of parseMetrics(text).values()) {
    if (!f.name.startsWith('aerie_cache_')) continue;
    for (const s of f.samples) {
      const c = /cache="([^"]*)"/.exec(s.labels)?.[1];
      if (c === undefined) continue;
      if (!out.has(c)) out.set(c, new Map());
      out.get(c)!.set(s.name.slice('aerie_cache_'.length), s.value);
    }
  }
  return out;
}

function pct(n: number, d: number): string {
  return d > 0 ? `${(100 * n / d).toFixed(1)} %` : '—';
}

function cacheCard(name: string, m: Map<string, number>): HTMLElement {
  const v = (k: string): number => m.get(k) ?? 0;
  const gets = v('hits_total') + v('partial_hits_total') + v('misses_total');
  const slabs = v('slabs'), fifo = v('fifo_slabs'), lru = v('lru_slabs'), free = Math.max(0, slabs - fifo - lru);
  const w = (n: number): string => `${slabs > 0 ? (100 * n / slabs).toFixed(2) : 0}%`;
  return h('section', { class: 'card cache', 'data-cache': name },
    h('h2', null, name === 'results' ? 'Results cache ' : name === 'chunks' ? 'Chunk cache (bucket tier) ' : `Cache ${name} `, h('code', { class: 'path' }, `cache="${name}"`)),
    table(['Gets', 'Hits', 'Partial hits', 'Misses', 'Hit ratio', 'Hit or partial'], [[
      String(gets), String(v('hits_total')), String(v('partial_hits_total')), String(v('misses_total')),
      h('span', { class: 'hit-ratio' }, pct(v('hits_total'), gets)), pct(v('hits_total') + v('partial_hits_total'), gets)]], 'ratios'),
    h('h3', null, 'Slabs by partition'),
    h('div', { class: 'slab-bar', title: `FIFO ${fifo}, LRU ${lru}, free ${free} of ${slabs}` },
      h('span', { class: 'fifo', style: `width: ${w(fifo)}` }), h('span', { class: 'lru', style: `width: ${w(lru)}` }),
      h('span', { class: 'lru-target', style: `left: ${w(fifo + v('lru_target_slabs'))}`, title: 'the LRU partition\'s target' })),
    table(['Slabs', 'Used', 'FIFO', 'LRU', 'LRU target', 'Free', 'Keys'], [[
      String(slabs), String(v('slabs_used')), String(fifo), String(lru), String(v('lru_target_slabs')), String(free), String(v('keys'))]], 'slabs'),
    h('h3', null, 'Traffic'),
    table(['Stored', 'Returned', 'Evictions', 'Compactions', 'Duplicates compacted', 'Corrupt slabs dropped'], [[
      formatBytes(v('set_bytes_total')), formatBytes(v('get_bytes_total')), String(v('evictions_total')), String(v('compactions_total')),
      String(v('compacted_duplicate_points_total')), String(v('corrupt_slabs_total'))]], 'traffic'));
}

export const page: Page = {
  mount(root) {
    const ac = new AbortController();
    const body = h('div', { class: 'caches' }, h('p', { class: 'hint' }, 'Loading…'));
    const refresh = h('button', { type: 'button', class: 'refresh' }, 'Refresh');
    clear(root, h('div', { class: 'controls' }, h('span', { class: 'hint' }, 'From the server\'s /metrics; counters since it started.'), refresh), body);
    async function load(): Promise<void> {
      try {
        const caches = byCache(await getText('/metrics', ac.signal));
        clear(body, caches.size === 0
          ? h('p', { class: 'hint' }, 'No cache runs (aerie.cache.results.enabled is false and no bucket tier has a chunk cache).')
          : [...caches.keys()].sort().map((c) => cacheCard(c, caches.get(c)!)));
        body.dataset.state = 'ok';
      } catch (e) {
        if (!ac.signal.aborted) clear(body, errorBox('GET /metrics', e));
      }
    }
    refresh.addEventListener('click', () => void load());
    void load();
    return () => ac.abort();
  },
};
