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

// request fetches url and returns the answer and its text; a network
// failure becomes an APIError whose message names path.
async function request(path: string, url: string, accept: string, signal?: AbortSignal): Promise<[globalThis.Response, string]> {
  let resp: globalThis.Response;
  try {
    resp = await fetch(url, { signal, headers: { Accept: accept } });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e;
    throw new APIError(`GET ${path}: ${e instanceof Error ? e.message : String(e)}`, 0);
  }
  return [resp, await resp.text()];
}

// get fetches path and unwraps the API envelope; every failure (network,
// non-JSON answer such as a plain 404, an API error) becomes an APIError
// whose message names the path.
export async function get<T>(path: string, params?: Params, signal?: AbortSignal): Promise<Response<T>> {
  const [resp, text] = await request(path, apiURL(path, params), 'application/json', signal);
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

// getBare fetches an endpoint that answers bare JSON, without the API
// envelope, and its errors as text or {"error": …}: graphite-web's
// /render, /metrics/find and /functions. Every failure becomes an
// APIError whose message names the path.
export async function getBare<T>(path: string, params?: Params, signal?: AbortSignal): Promise<T> {
  const [resp, text] = await request(path, apiURL(path, params), 'application/json', signal);
  if (!resp.ok) {
    let msg = text.trim();
    try { msg = (JSON.parse(text) as { error?: string }).error ?? msg; } catch { /* plain text */ }
    throw new APIError(`GET ${path}: HTTP ${resp.status}: ${msg.slice(0, 300)}`, resp.status);
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new APIError(`GET ${path}: HTTP ${resp.status}: not JSON: ${text.trim().slice(0, 200)}`, resp.status);
  }
}

// getText fetches a plain-text endpoint such as /metrics.
export async function getText(path: string, signal?: AbortSignal): Promise<string> {
  const [resp, text] = await request(path, path, 'text/plain', signal);
  if (!resp.ok) throw new APIError(`GET ${path}: HTTP ${resp.status}: ${text.trim().slice(0, 200)}`, resp.status);
  return text;
}
