// The guarded fetch: the only network API a tool gets. Built on node:http/node:https captured
// by the host before the tool loads; Node's own fetch, its `dispatcher` option and undici are
// never reachable. This file checks the target of every request and every redirect hop against
// the declared hosts; address classification inside the socket's DNS lookup is added here by
// the network-guard work (interfaces.md 4.7).
import { deniedError } from './module_guard.mjs';
import { BufferFrom, bufferConcat, freeze } from './pristine.mjs';

const MAX_REDIRECTS = 5;
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
const CREDENTIAL_HEADERS = freeze(['authorization', 'cookie', 'proxy-authorization']);
const REDIRECT_STATUSES = freeze([301, 302, 303, 307, 308]);

/** interfaces.md 1.4 hostAllowed: `*` any host, `*.x` proper subdomains of x, else equality. */
export function hostAllowed(host, patterns) {
  const h = String(host).toLowerCase().replace(/\.$/, '');
  for (const p of patterns) {
    if (p === '*') return true;
    if (p.startsWith('*.')) {
      const suffix = p.slice(1);
      if (h.endsWith(suffix) && h.length > suffix.length) return true;
    } else if (p === h) {
      return true;
    }
  }
  return false;
}

function bareHost(url) {
  const h = url.hostname.toLowerCase();
  return h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h;
}

/** Throw ERR_ACCESS_DENIED unless ``url`` may be requested under ``patterns``. */
export function checkTarget(url, patterns) {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw deniedError(`the URL scheme "${url.protocol}"`);
  }
  if (url.username || url.password) {
    throw deniedError('a URL with credentials');
  }
  const host = bareHost(url);
  if (!hostAllowed(host, patterns)) {
    const err = deniedError('');
    err.message = `Network access to "${host}" is denied. Declare it in manifest permissions.network.`;
    throw err;
  }
}

function headerObject(init) {
  const out = Object.create(null);
  if (!init) return out;
  const entries = typeof init.entries === 'function' ? init.entries() : Object.entries(init);
  for (const [k, v] of entries) out[String(k).toLowerCase()] = String(v);
  return out;
}

function bodyBytes(body) {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return BufferFrom(body, 'utf8');
  if (body instanceof URLSearchParams) return BufferFrom(body.toString(), 'utf8');
  if (body instanceof ArrayBuffer) return BufferFrom(new Uint8Array(body));
  if (ArrayBuffer.isView(body)) return BufferFrom(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError('fetch body must be a string, URLSearchParams, ArrayBuffer or typed array');
}

// node:http/node:https are loaded on first use (loading TLS costs ~40 ms per process) through
// the getBuiltinModule captured here, before harden.mjs wraps it and before the tool loads.
const getBuiltin = process.getBuiltinModule;

function requestOnce(url, { method, headers, body, signal }) {
  return new Promise((resolve, reject) => {
    const lib = getBuiltin(url.protocol === 'https:' ? 'node:https' : 'node:http');
    const req = lib.request(url, {
      method,
      headers,
      signal,
      rejectUnauthorized: true, // explicit: process.env.NODE_TLS_REJECT_UNAUTHORIZED is tool-writable
      agent: false,
    });
    req.on('error', (err) => {
      const failure = new TypeError('fetch failed');
      failure.cause = { code: err && err.code, message: String(err && err.message) };
      reject(err && err.name === 'AbortError' ? err : failure);
    });
    req.on('response', (res) => {
      const chunks = [];
      let size = 0;
      res.on('data', (chunk) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          req.destroy();
          reject(new TypeError('fetch failed: response larger than 16 MiB'));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        resolve({
          status: res.statusCode,
          statusText: res.statusMessage || '',
          headers: res.headers,
          body: bufferConcat(chunks),
        });
      });
      res.on('error', () => reject(new TypeError('fetch failed')));
    });
    if (body) req.end(body);
    else req.end();
  });
}

/** Build the fetch installed as the tool's global (harden.mjs locks it). */
export function createGuardedFetch({ patterns }) {
  const allowed = freeze([...patterns]);
  const URLCtor = URL;

  return async function fetch(input, init = {}) {
    if (init && 'dispatcher' in init) throw deniedError('the fetch dispatcher option');
    let url = new URLCtor(typeof input === 'string' || input instanceof URLCtor ? input : input.url);
    let method = String(init.method || (input && input.method) || 'GET').toUpperCase();
    let headers = headerObject(init.headers);
    let body = bodyBytes(init.body);
    const redirectMode = init.redirect || 'follow';
    for (let hop = 0; ; hop += 1) {
      try {
        checkTarget(url, allowed);
      } catch (err) {
        if (hop > 0) err.message = `Redirect blocked: ${err.message}`;
        throw err;
      }
      const res = await requestOnce(url, { method, headers, body, signal: init.signal });
      const location = res.headers.location;
      if (REDIRECT_STATUSES.includes(res.status) && location && redirectMode !== 'manual') {
        if (redirectMode === 'error') throw new TypeError('fetch failed: redirect');
        if (hop >= MAX_REDIRECTS) throw new TypeError('fetch failed: more than 5 redirects');
        const next = new URLCtor(location, url);
        if (next.origin !== url.origin) {
          for (const name of CREDENTIAL_HEADERS) delete headers[name];
        }
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
          method = 'GET';
          body = null;
          delete headers['content-type'];
          delete headers['content-length'];
        }
        url = next;
        continue;
      }
      // Response/Headers are read at use: touching them loads undici (~35 ms), which most tools
      // never need. A tool that replaces them only changes what its own fetch returns.
      const outHeaders = new globalThis.Headers();
      for (const [k, v] of Object.entries(res.headers)) {
        if (Array.isArray(v)) for (const item of v) outHeaders.append(k, item);
        else if (v !== undefined) outHeaders.append(k, String(v));
      }
      const nullBody = res.status === 204 || res.status === 304 || res.status < 200 || method === 'HEAD';
      const response = new globalThis.Response(nullBody ? null : res.body, {
        status: res.status, statusText: res.statusText, headers: outHeaders,
      });
      Object.defineProperty(response, 'url', { value: url.href });
      Object.defineProperty(response, 'redirected', { value: hop > 0 });
      return response;
    }
  };
}
