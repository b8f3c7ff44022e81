// Calls to Aerie's Prometheus-compatible HTTP API on the page's own origin.

export interface Response<T> {
  status: 'success' | 'error';
  data: T;
  errorType?: string;
  error?: string;
  warnings?: string[];
  infos?: string[];
}

export class APIError extends Error {
  constructor(message: string, readonly httpStatus: number, readonly errorType?: string) {
    super(message);
  }
}

export type Params = Record<string, string | string[] | undefined>;

export function apiURL(path: string, params?: Params): string {
  const u = new URL(path, window.location.origin);
  for (const [k, v] of Object.entries(params ?? {})) {
    if (v === undefined) continue;
    for (const x of Array.isArray(v) ? v : [v]) u.searchParams.append(k, x);
  }
  return u.pathname + u.search;
}

// get fetches path and unwraps the API envelope; every failure (network,
// non-JSON answer such as a plain 404, an API error) becomes an APIError
// whose message names the path.
export async function get<T>(path: string, params?: Params, signal?: AbortSignal): Promise<Response<T>> {
  const url = apiURL(path, params);
  let resp: globalThis.Response;
  try {
    resp = await fetch(url, { signal, headers: { Accept: 'application/json' } });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e;
    throw new APIError(`GET ${path}: ${e instanceof Error ? e.message : String(e)}`, 0);
  }
  const text = await resp.text();
  let body: Response<T>;
  try {
    body = JSON.parse(text) as Response<T>;
  } catch {
    throw new APIError(`GET ${path}: HTTP ${resp.status}: ${text.trim().slice(0, 200) || resp.statusText}`, resp.status);
  }
  if (body.status !== 'success') {
    throw new APIError(body.error ?? `GET ${path}: HTTP ${resp.status}`, resp.status, body.errorType);
  }
  return body;
}

// getText fetches a plain-text endpoint such as /metrics.
export async function getText(path: string, signal?: AbortSignal): Promise<string> {
  let resp: globalThis.Response;
  try {
    resp = await fetch(path, { signal, headers: { Accept: 'text/plain' } });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e;
    throw new APIError(`GET ${path}: ${e instanceof Error ? e.message : String(e)}`, 0);
  }
  const text = await resp.text();
  if (!resp.ok) throw new APIError(`GET ${path}: HTTP ${resp.status}: ${text.trim().slice(0, 200)}`, resp.status);
  return text;
}
