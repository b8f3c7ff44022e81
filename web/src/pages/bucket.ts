// The bucket tier page: the blocks moved to object storage and the cost of
// reading them back. The counters come from the aerie_bucket_* families of
// /metrics (registered only when the tier runs); the lists from Aerie's
// status API (/api/v1/status/aerie/storage).

import { get, getText } from '../api';
import { Child, clear, errorBox, formatBytes, h, table } from '../dom';
import { blocksTable, Storage, storagePath } from '../engine';
import type { Page } from '../main';
import { parseMetrics } from '../metrics';

function render(text: string, st: Storage): Child {
  const fams = parseMetrics(text);
  if (!fams.has('aerie_bucket_blocks')) {
    return h('p', { class: 'hint tier-off' }, 'The bucket tier is off (aerie.storage.tier: false): every block stays in <data.dir>/blocks.');
  }
  const one = (n: string): number => fams.get(n)?.samples.find((s) => s.name === n)?.value ?? 0;
  const fetched = one('aerie_bucket_query_fetched_bytes_total'), needed = one('aerie_bucket_query_needed_bytes_total');
  const metaGets = one('aerie_bucket_meta_gets_total');
  const requests = fams.get('aerie_bucket_requests_total')?.samples ?? [];
  const remote = st.blocks.blocks.list.filter((b) => b.remote);
  const b = st.bucket;
  return [
    h('section', { class: 'card' }, h('h2', null, 'Blocks'),
      table(['In the bucket', 'Moved since start', 'Failed uploads', 'Upload lag', 'Deletes pending'], [[
        h('span', { class: 'remote-blocks' }, String(b.blocks)), String(b.movedBlocks), String(b.uploadFailures),
        b.uploadLag > 0 ? `${(b.uploadLag / 3600000).toFixed(1)} h of data` : 'none due', String(b.pendingDeletes)]], 'bucket'),
      remote.length > 0 ? [h('h3', null, 'Blocks read from the bucket (of the newest listed)'), blocksTable(remote)]
        : h('p', { class: 'hint' }, `None of the ${st.blocks.blocks.list.length} newest blocks is in the bucket yet: blocks move once all their data are older than local_retention.`)),
    h('section', { class: 'card' }, h('h2', null, 'Reads'),
      table(['Fetched by queries', 'Needed', 'Read amplification', 'Range GETs', 'Round trips', 'Windows from cache'], [[
        formatBytes(fetched), formatBytes(needed), h('span', { class: 'read-amp' }, needed > 0 ? `${(fetched / needed).toFixed(2)}×` : '—'),
        String(one('aerie_bucket_data_gets_total')), String(one('aerie_bucket_data_fetches_total')), String(one('aerie_bucket_window_cache_hits_total'))]], 'reads'),
      table(['Metadata reads', 'From the local metadata cache', 'Metadata fetched'], [[
        String(metaGets), `${one('aerie_bucket_meta_cache_hits_total')}${metaGets > 0 ? ` (${(100 * one('aerie_bucket_meta_cache_hits_total') / metaGets).toFixed(1)} %)` : ''}`,
        formatBytes(one('aerie_bucket_meta_fetched_bytes_total'))]], 'meta'),
      requests.length > 0 ? [h('h3', null, 'Requests to the bucket'), table(['Labels', 'Count'], requests.map((s) => [s.labels, String(s.value)]), 'requests')] : null),
  ];
}

export const page: Page = {
  mount(root) {
    const ac = new AbortController();
    const body = h('div', { class: 'bucket' }, h('p', { class: 'hint' }, 'Loading…'));
    clear(root, body);
    Promise.all([getText('/metrics', ac.signal), get<Storage>(storagePath, { limit: '1000' }, ac.signal)]).then(
      ([text, st]) => { clear(body, render(text, st.data)); body.dataset.state = 'ok'; },
      (e) => { if (!ac.signal.aborted) clear(body, errorBox('GET /metrics and ' + storagePath, e)); });
    return () => ac.abort();
  },
};
