// The shell: a header with the pages' links and a client-side router. Each
// page is its own chunk, loaded on first visit, so the status page does not
// download the editor and the chart.

import { clear, errorBox, h, link } from './dom';

export interface Page {
  // mount renders the page for the URL's query parameters into root and
  // returns a function that releases what it holds (timers, editors).
  mount(root: HTMLElement, params: URLSearchParams): () => void;
}

const pages: Record<string, { title: string; load: () => Promise<Page> }> = {
  '/query': { title: 'Query', load: () => import('./pages/query').then((m) => m.page) },
  '/explore': { title: 'Explore', load: () => import('./pages/explore').then((m) => m.page) },
  '/sensors': { title: 'Sensors', load: () => import('./pages/sensors').then((m) => m.page) },
  '/graphite': { title: 'Graphite', load: () => import('./pages/graphite').then((m) => m.page) },
  '/cache': { title: 'Cache', load: () => import('./pages/cache').then((m) => m.page) },
  '/bucket': { title: 'Bucket', load: () => import('./pages/bucket').then((m) => m.page) },
  '/status': { title: 'Status', load: () => import('./pages/status').then((m) => m.page) },
};

const nav = h('nav', null, Object.entries(pages).map(([path, p]) => link(path, p.title)));
const main = h('main');
document.body.append(
  h('header', null, h('a', { class: 'brand', href: '/query', 'data-route': true }, 'Aerie'), nav),
  main,
);

let unmount: (() => void) | null = null;
let generation = 0;

async function render(): Promise<void> {
  const gen = ++generation;
  let path = window.location.pathname;
  if (path === '/' || path === '') {
    path = '/query';
    history.replaceState(null, '', path + window.location.search);
  }
  const p = pages[path];
  for (const a of nav.querySelectorAll('a')) a.classList.toggle('active', a.getAttribute('href') === path);
  unmount?.();
  unmount = null;
  if (!p) {
    clear(main, h('p', null, `No page at ${path}.`));
    return;
  }
  document.title = `${p.title} · Aerie`;
  try {
    const page = await p.load();
    if (gen !== generation) return;
    clear(main);
    unmount = page.mount(main, new URLSearchParams(window.location.search));
  } catch (e) {
    clear(main, errorBox(`loading the ${p.title} page`, e));
  }
}

// navigate changes the URL and renders its page.
export function navigate(url: string): void {
  history.pushState(null, '', url);
  void render();
}

document.addEventListener('click', (e) => {
  const a = (e.target as Element | null)?.closest?.('a[data-route]') as HTMLAnchorElement | null;
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(a.getAttribute('href') ?? '/');
});
window.addEventListener('popstate', () => void render());
void render();
