// A minimal element builder: the pages are small and imperative (CodeMirror
// and uPlot own their DOM), so no framework sits in between.

export type Child = Node | string | number | null | undefined | false | Child[];

type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (typeof v === 'function') {
        el.addEventListener(k.slice(2).toLowerCase(), v);
      } else if (k === 'value' && 'value' in el) {
        (el as HTMLInputElement).value = String(v);
      } else {
        el.setAttribute(k, v === true ? '' : String(v));
      }
    }
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

export function clear(el: Node, ...children: Child[]): void {
  while (el.firstChild) el.removeChild(el.firstChild);
  append(el, children);
}

// A link handled by the client-side router (see main.ts).
export function link(href: string, ...children: Child[]): HTMLAnchorElement {
  return h('a', { href, 'data-route': true }, ...children);
}

export function errorBox(what: string, err: unknown): HTMLElement {
  return h('div', { class: 'error', role: 'alert' }, h('strong', null, what + ': '), errorText(err));
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// A table from a header and rows of cells.
export function table(head: string[], rows: Child[][], cls = ''): HTMLTableElement {
  return h('table', { class: 'data ' + cls },
    h('thead', null, h('tr', null, head.map((c) => h('th', null, c)))),
    h('tbody', null, rows.map((r) => h('tr', null, r.map((c) => h('td', null, c))))));
}

export function formatLabels(metric: Record<string, string>): string {
  const name = metric.__name__ ?? '';
  const pairs = Object.keys(metric)
    .filter((k) => k !== '__name__')
    .sort()
    .map((k) => `${k}=${JSON.stringify(metric[k])}`);
  return pairs.length === 0 && name !== '' ? name : `${name}{${pairs.join(', ')}}`;
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

export function formatTime(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}
