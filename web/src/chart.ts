// The time-series chart: uPlot with its live legend (hover values, a click
// on a series hides it) and drag-to-zoom reported to the caller.

import uPlot from 'uplot';
import { formatLabels } from './dom';

export interface MatrixSeries {
  metric: Record<string, string>;
  values?: [number, string][];
}

const palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

export function seriesColor(i: number): string {
  return palette[i % palette.length];
}

// Prometheus sends values as strings: "NaN", "+Inf" and "-Inf" cannot be
// drawn and become gaps.
function parseValue(s: string): number | null {
  const v = Number(s);
  return Number.isFinite(v) ? v : null;
}

// align turns Prometheus' per-series [t, v] lists into uPlot's columns: one
// sorted time axis shared by all series, null where a series has no sample.
export function align(result: MatrixSeries[]): uPlot.AlignedData {
  const ts = new Set<number>();
  for (const s of result) for (const [t] of s.values ?? []) ts.add(t);
  const xs = Float64Array.from(ts).sort();
  const index = new Map<number, number>();
  xs.forEach((t, i) => index.set(t, i));
  const cols: (number | null)[][] = result.map((s) => {
    const col = new Array<number | null>(xs.length).fill(null);
    for (const [t, v] of s.values ?? []) col[index.get(t)!] = parseValue(v);
    return col;
  });
  return [Array.from(xs), ...cols] as uPlot.AlignedData;
}

export function formatValue(v: number | null | undefined): string {
  if (v === null || v === undefined) return '—';
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(3);
  return String(Math.round(v * 1e6) / 1e6);
}

export interface ChartOptions {
  start: number; // seconds
  end: number; // seconds
  width: number;
  onZoom(start: number, end: number): void;
}

export function newChart(parent: HTMLElement, result: MatrixSeries[], o: ChartOptions): uPlot {
  const data = align(result);
  const opts: uPlot.Options = {
    width: o.width,
    height: 320,
    series: [
      { label: 'Time', value: (_u, v) => (v === null ? '—' : new Date(v * 1000).toISOString().replace('.000Z', 'Z')) },
      ...result.map((s, i): uPlot.Series => ({
        label: formatLabels(s.metric),
        stroke: seriesColor(i),
        width: 1.5,
        // uPlot's default: points drawn only where they are sparse, so an
        // isolated sample (between gaps) is still visible.
        value: (_u, v) => formatValue(v),
      })),
    ],
    // UTC like the rest of the page (the end field, the legend, the URL).
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    scales: { x: { time: true, min: o.start, max: o.end } },
    axes: [
      { stroke: '#555', grid: { stroke: '#eee' } },
      { stroke: '#555', grid: { stroke: '#eee' }, size: 70, values: (_u, vals) => vals.map((v) => formatValue(v)) },
    ],
    // The drag selects; the selection becomes the query's new range (the
    // caller re-runs the query) instead of uPlot's own rescale.
    cursor: { drag: { x: true, y: false, setScale: false } },
    legend: { live: true },
    hooks: {
      setSelect: [
        (u) => {
          if (u.select.width < 3) return;
          const from = u.posToVal(u.select.left, 'x');
          const to = u.posToVal(u.select.left + u.select.width, 'x');
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          o.onZoom(from, to);
        },
      ],
    },
  };
  return new uPlot(opts, data, parent);
}
