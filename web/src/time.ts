// Prometheus durations ("1h30m", "500ms") and times (RFC 3339 or Unix
// seconds), as the query page keeps them in its URL.

const units: [string, number][] = [['y', 365 * 86400], ['w', 7 * 86400], ['d', 86400], ['h', 3600], ['m', 60], ['s', 1], ['ms', 0.001]];

// parseDuration returns seconds, or null if s is not a positive duration.
export function parseDuration(s: string): number | null {
  s = s.trim();
  if (s === '') return null;
  if (/^\d+(\.\d+)?$/.test(s)) {
    const v = Number(s);
    return v > 0 ? v : null;
  }
  const re = /(\d+)(ms|y|w|d|h|m|s)/y;
  let total = 0;
  let pos = 0;
  while (pos < s.length) {
    re.lastIndex = pos;
    const m = re.exec(s);
    if (!m) return null;
    total += Number(m[1]) * units.find(([u]) => u === m[2])![1];
    pos = re.lastIndex;
  }
  return total > 0 ? total : null;
}

export function formatDuration(sec: number): string {
  let ms = Math.round(sec * 1000);
  if (ms <= 0) return '0s';
  let out = '';
  for (const [u, len] of units) {
    const l = Math.round(len * 1000);
    const n = Math.floor(ms / l);
    if (n > 0) { out += `${n}${u}`; ms -= n * l; }
  }
  return out;
}

// parseTime accepts RFC 3339 or Unix seconds; it returns seconds or null.
export function parseTime(s: string): number | null {
  s = s.trim();
  if (s === '') return null;
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s);
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : t / 1000;
}

export function formatTime(sec: number): string {
  return new Date(Math.round(sec * 1000)).toISOString().replace('.000Z', 'Z');
}
