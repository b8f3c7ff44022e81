// Aerie's own status API (/api/v1/status/aerie/..., docs/ui.md): the types
// of its answers and the tables the status and explore pages share.

import { Child, formatBytes, formatTime, h, table } from './dom';

export interface ListOf<T> { total: number; list: T[] }

export interface Block {
  ulid: string; minTime: number; maxTime: number; level: number; seq: number; backfill: number;
  series: number; groups: number; samples: number; bytes: number; bytesPerSample: number; parents: string[]; remote: boolean;
}

export interface Group { id: number; key: string; series: number; partitions: number; rows: number }

export interface Partition {
  id: number; start: number; end: number; minSampleTime?: number; maxSampleTime?: number;
  flushed: boolean; area?: string; memoryBlocks: number;
}

export interface Storage {
  head: { series: number; bytes: number; minTime: number; maxTime: number; partitions: Partition[]; groups: ListOf<Group> };
  flush: { running: boolean; groupsDone: number; groupsTotal: number; flushes: number };
  memory: Record<string, number>;
  blocks: { bytes: number; samples: number; byLevel: { level: number; blocks: number; bytes: number; samples: number; bytesPerSample: number }[]; blocks: ListOf<Block> };
  wal: { firstSegment: number; lastSegment: number; files: number; bytes: number };
  bucket: { blocks: number; movedBlocks: number; uploadFailures: number; uploadLag: number; pendingDeletes: number };
  quarantined: ListOf<string>;
}

export interface SeriesStatus {
  labels: Record<string, string>;
  groups: (Group & { members: Record<string, string>[] })[];
  blocks: ListOf<Block>;
}

export const storagePath = '/api/v1/status/aerie/storage';
export const seriesPath = '/api/v1/status/aerie/series';

// A time in ms, or — for the sentinels an empty head answers.
export function time(ms: number | undefined): string {
  return ms === undefined || Math.abs(ms) >= 8.64e15 ? '—' : formatTime(ms);
}

export function bytes(n: number): string {
  return `${formatBytes(n)}`;
}

export function blocksTable(bs: Block[]): HTMLTableElement {
  return table(['Block', 'Tier', 'From', 'To', 'Level', 'Series', 'Groups', 'Samples', 'Size', 'B/sample'], bs.map((b) => [
    h('code', { title: b.ulid + (b.parents.length ? `\nmerged from ${b.parents.join(', ')}` : '') }, b.ulid),
    b.remote ? 'bucket' : 'local', time(b.minTime), time(b.maxTime), String(b.level), String(b.series), String(b.groups), String(b.samples),
    bytes(b.bytes), b.bytesPerSample.toFixed(2)]), 'blocks');
}

// cut says how many of a list's entries are shown, when not all are.
export function cut(l: ListOf<unknown>, what: string): Child {
  return l.total > l.list.length ? h('p', { class: 'hint' }, `Showing ${l.list.length} of ${l.total} ${what}.`) : null;
}
