// The guarded fetch: the only network API a tool gets (docs/network-security.md). Built on
// node:http/node:https obtained through the getBuiltinModule captured before the tool loads;
// Node's own fetch, its `dispatcher` option and undici are never reachable.
//
// For every request and every redirect hop: the URL is parsed once and checked statically
// (net_target.mjs: scheme, credentials, declared host, IP literals, localhost); then the
// address check runs INSIDE the socket's DNS lookup (checkedLookup): every answer must be
// public, and the connection is handed exactly the answers that were checked. After the
// TCP connect the peer address is compared with the checked set once more, before a byte is
// written. Redirects are followed here (at most policy.redirects.max), each hop re-checked.
import { addressKey, compileRanges, isLoopbackAddress, isPublicAddress } from './addresses.mjs';
import { ACCESS_DENIED } from './codes.mjs';
import { decodeBody, readBody } from './fetch_body.mjs';
import {
  REASONS, checkTarget, fetchFailed, networkDenied, parseUrl, snapshot,
} from './net_target.mjs';
import { BufferFrom, apply, defineProperty, freeze, keys } from './pristine.mjs';

export { checkTarget, hostAllowed, parseUrl, snapshot } from './net_target.mjs';

// Loaded on first use (TLS costs ~40 ms per process) through the original getBuiltinModule,
// captured here before harden.mjs wraps it and before the tool loads.
const getBuiltin = process.getBuiltinModule;
const setImmediateFn = setImmediate;
const TypeErrorCtor = TypeError;
const FORBIDDEN_METHODS = freeze(['CONNECT', 'TRACE', 'TRACK']);
const REDIRECT_MODES = freeze(['follow', 'error', 'manual']);
const BODY_HEADERS = freeze(['content-type', 'content-encoding', 'content-language', 'content-location']);

function has(list, value) {
  for (let i = 0; i < list.length; i += 1) if (list[i] === value) return true;
  return false;
}

function pushOwn(list, value) {
  defineProperty(list, list.length, {
    value, writable: true, enumerable: true, configurable: true,
  });
}

/** The system resolver: every address of the name, in the resolver's order. */
function systemResolver(name, callback) {
  getBuiltin('node:dns').lookup(name, { all: true, verbatim: true }, (err, answers) => {
    if (err) callback(err, null);
    else callback(null, answers);
  });
}

/**
 * A resolver from a table ``{name: [[addresses of call 1], [call 2], …]}`` (the last answer
 * repeats). Test hook only: it arrives in the job from the Python parent
 * (SpliceRuntime(_unsafe_test_resolver=…)); no package, variable or file can set it.
 */
export function tableResolver(table) {
  const calls = Object.create(null);
  return (name, callback) => {
    const answers = table[name];
    setImmediateFn(() => {
      if (!answers || answers.length === 0) {
        const err = new Error(`getaddrinfo ENOTFOUND ${name}`);
        err.code = 'ENOTFOUND';
        callback(err, null);
        return;
      }
      const n = calls[name] || 0;
      calls[name] = n + 1;
      const list = answers[n < answers.length ? n : answers.length - 1];
      const out = [];
      for (let i = 0; i < list.length; i += 1) {
        pushOwn(out, { address: list[i], family: list[i].indexOf(':') >= 0 ? 6 : 4 });
      }
      callback(null, out);
    });
  };
}

/**
 * The lookup function given to the socket for one target. It resolves the name once, checks
 * every answer, records the checked addresses in ``state.allowed`` and hands net exactly
 * those. A refusal is kept in ``state.denial`` so the request fails with it.
 */
export function checkedLookup(target, state, { resolve, ranges }) {
  return function lookup(_hostname, options, callback) {
    const cb = typeof options === 'function' ? options : callback;
    const all = typeof options === 'object' && options !== null && options.all === true;
    state.lookups += 1;
    resolve(target.host, (err, answers) => {
      if (err) {
        cb(err);
        return;
      }
      if (!answers || answers.length === 0) {
        const missing = new Error(`getaddrinfo ENOTFOUND ${target.host}`);
        missing.code = 'ENOTFOUND';
        cb(missing);
        return;
      }
      const checked = [];
      for (let i = 0; i < answers.length; i += 1) {
        const address = String(answers[i].address);
        const family = answers[i].family === 6 ? 6 : 4;
        const ok = target.grant === 'localhost'
          ? isLoopbackAddress(ranges, address)
          : isPublicAddress(ranges, address);
        if (!ok) {
          const kind = target.grant === 'localhost' ? 'a loopback' : 'a public';
          state.denial = networkDenied(
            `Network access to "${target.host}" is denied: it resolves to ${address}, which is not ${kind} address.`,
            REASONS.NOT_PUBLIC,
          );
          cb(state.denial);
          return;
        }
        state.allowed[addressKey(address)] = true;
        pushOwn(checked, freeze({ address, family }));
      }
      if (all) cb(null, checked);
      else cb(null, checked[0].address, checked[0].family);
    });
  };
}

function headerRecord(source) {
  const out = Object.create(null);
  if (source === undefined || source === null) return out;
  if (typeof source.entries === 'function' || Array.isArray(source)) {
    const entries = Array.isArray(source) ? source : source.entries();
    for (const pair of entries) out[String(pair[0]).toLowerCase()] = String(pair[1]);
    return out;
  }
  for (const name of Object.keys(source)) out[String(name).toLowerCase()] = String(source[name]);
  return out;
}

async function bodyBytes(body) {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return { bytes: BufferFrom(body, 'utf8'), type: 'text/plain;charset=UTF-8' };
  if (body instanceof URLSearchParams) {
    return {
      bytes: BufferFrom(body.toString(), 'utf8'),
      type: 'application/x-www-form-urlencoded;charset=UTF-8',
    };
  }
  if (body instanceof ArrayBuffer) return { bytes: BufferFrom(new Uint8Array(body)), type: null };
  if (ArrayBuffer.isView(body)) {
    return { bytes: BufferFrom(body.buffer, body.byteOffset, body.byteLength), type: null };
  }
  if (typeof Blob === 'function' && body instanceof Blob) {
    return { bytes: BufferFrom(await body.arrayBuffer()), type: body.type || null };
  }
  throw new TypeErrorCtor('fetch body must be a string, URLSearchParams, Blob, ArrayBuffer or typed array');
}

/** fetch(input, init) arguments → one plain description, each field read once. */
async function describe(input, init) {
  const isRequest = input !== null && typeof input === 'object' && !(input instanceof URL)
    && typeof globalThis.Request === 'function' && input instanceof globalThis.Request;
  const urlText = isRequest ? String(input.url) : String(input);
  const opts = init === undefined || init === null ? {} : init;
  if ('dispatcher' in opts) throw networkDenied('Access to the fetch dispatcher option is denied in the Splice sandbox', 'dispatcher');
  const method = String(opts.method ?? (isRequest ? input.method : 'GET')).toUpperCase();
  if (has(FORBIDDEN_METHODS, method)) throw new TypeErrorCtor(`fetch: method ${method} is not allowed`);
  const redirect = String(opts.redirect ?? (isRequest ? input.redirect : 'follow'));
  if (!has(REDIRECT_MODES, redirect)) throw new TypeErrorCtor(`fetch: invalid redirect mode "${redirect}"`);
  const headers = headerRecord(opts.headers ?? (isRequest ? input.headers : undefined));
  let body = await bodyBytes(opts.body);
  if (body === null && isRequest && opts.body === undefined && input.body !== null) {
    body = { bytes: BufferFrom(await input.arrayBuffer()), type: null };
  }
  if (body !== null && (method === 'GET' || method === 'HEAD')) {
    throw new TypeErrorCtor('fetch: a GET or HEAD request cannot have a body');
  }
  if (body !== null && body.type !== null && headers['content-type'] === undefined) {
    headers['content-type'] = body.type;
  }
  const signal = opts.signal ?? (isRequest ? input.signal : undefined);
  return { urlText, method, headers, body: body === null ? null : body.bytes, redirect, signal };
}

function outgoingHeaders(headers, policy) {
  const out = Object.create(null);
  for (const name of keys(headers)) {
    if (!has(policy.requestHeaders.dropped, name)) out[name] = headers[name];
  }
  if (out['accept-encoding'] === undefined) out['accept-encoding'] = 'gzip, deflate, br';
  if (out.accept === undefined) out.accept = '*/*';
  return out;
}

function requestOptions(target, method, headers, lookup) {
  const https = target.protocol === 'https:';
  const opts = Object.create(null);
  // Every option node:http/net/tls would otherwise read from a (tool-writable)
  // Object.prototype is an own property here: where to connect is decided only by the checks.
  opts.protocol = target.protocol;
  opts.hostname = target.host;
  opts.host = target.host;
  opts.port = target.port === '' ? (https ? 443 : 80) : Number(target.port);
  opts.path = target.path;
  opts.method = method;
  opts.headers = headers;
  opts.agent = false;
  opts.lookup = lookup;
  opts.family = 0;
  opts.hints = 0;
  opts.socketPath = undefined;
  opts.createConnection = undefined;
  opts.localAddress = undefined;
  opts.localPort = undefined;
  opts.setHost = true;
  opts.insecureHTTPParser = false;
  opts.timeout = undefined;
  if (https) {
    // explicit: process.env.NODE_TLS_REJECT_UNAUTHORIZED is tool-writable
    opts.rejectUnauthorized = true;
    opts.checkServerIdentity = getBuiltin('node:tls').checkServerIdentity;
    opts.servername = target.literal ? undefined : target.host;
    opts.ca = undefined;
    opts.secureContext = undefined;
  }
  return opts;
}

/** One request to one checked target; resolves the IncomingMessage. */
function send(target, { method, headers, body, signal }, guard) {
  return new Promise((resolve, reject) => {
    const state = { allowed: Object.create(null), denial: null, lookups: 0 };
    if (target.literal) state.allowed[addressKey(target.host)] = true;
    const lib = getBuiltin(target.protocol === 'https:' ? 'node:https' : 'node:http');
    const lookup = checkedLookup(target, state, guard);
    let req;
    try {
      req = lib.request(requestOptions(target, method, headers, lookup));
    } catch (err) {
      reject(new TypeErrorCtor(`fetch: ${err && err.message}`));
      return;
    }
    const onAbort = () => {
      req.destroy();
      reject(signal.reason);
    };
    if (signal) {
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener('abort', onAbort, { once: true });
    }
    req.on('socket', (socket) => {
      socket.prependListener('connect', () => {
        const key = addressKey(socket.remoteAddress);
        if (key === null || state.allowed[key] !== true) {
          state.denial = networkDenied(
            `Network access to "${target.host}" is denied: the connection reached an unchecked address.`,
            REASONS.NOT_PUBLIC,
          );
          socket.destroy(state.denial);
        }
      });
    });
    req.on('error', (err) => {
      if (state.denial !== null) reject(state.denial);
      else if (signal && signal.aborted) reject(signal.reason);
      else reject(fetchFailed(String(err && err.message), err && err.code));
    });
    req.on('response', (res) => {
      if (signal) signal.removeEventListener('abort', onAbort);
      resolve({ res, req });
    });
    if (body) req.end(body);
    else req.end();
  });
}

function abortable(promise, signal, req) {
  if (!signal) return promise;
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      req.destroy();
      reject(signal.reason);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(signal.aborted ? signal.reason : err);
      },
    );
  });
}

function toResponse(res, body, url, redirected, method) {
  const outHeaders = new globalThis.Headers();
  for (const name of Object.keys(res.headers)) {
    const value = res.headers[name];
    if (Array.isArray(value)) for (const item of value) outHeaders.append(name, item);
    else if (value !== undefined) outHeaders.append(name, String(value));
  }
  const status = res.statusCode;
  const nullBody = status === 204 || status === 205 || status === 304 || method === 'HEAD';
  let response;
  try {
    // Response/Headers are read at use: touching them loads undici (~35 ms), which most tools
    // never need. A tool that replaces them only changes what its own fetch returns.
    response = new globalThis.Response(nullBody ? null : body, {
      status, statusText: res.statusMessage || '', headers: outHeaders,
    });
  } catch (err) {
    throw fetchFailed(`invalid response: ${err && err.message}`);
  }
  defineProperty(response, 'url', { value: url });
  defineProperty(response, 'redirected', { value: redirected });
  return response;
}

/**
 * Build the fetch installed as the tool's global (harden.mjs locks it). ``policy`` is
 * netpolicy.json; ``resolve`` replaces the system resolver (tests only, see tableResolver).
 */
export function createGuardedFetch({ patterns, policy, resolve = systemResolver }) {
  const allowed = freeze(apply(Array.prototype.slice, patterns, []));
  const guard = freeze({ resolve, ranges: compileRanges(policy) });
  const redirects = policy.redirects;

  return async function fetch(input, init = undefined) {
    const request = await describe(input, init);
    let parts = snapshot(parseUrl(request.urlText));
    let { method, body } = request;
    const headers = request.headers;
    for (let hop = 0; ; hop += 1) {
      let target;
      try {
        target = checkTarget(parts, allowed, policy, guard.ranges);
      } catch (err) {
        if (hop > 0) err.message = `Redirect blocked: ${err.message}`;
        throw err;
      }
      const sent = { method, headers: outgoingHeaders(headers, policy), body, signal: request.signal };
      let exchange;
      try {
        exchange = await send(target, sent, guard);
      } catch (err) {
        if (hop > 0 && err && err.code === ACCESS_DENIED && err.reason !== undefined) {
          err.message = `Redirect blocked: ${err.message}`;
        }
        throw err;
      }
      const { res, req } = exchange;
      const location = res.headers.location;
      if (has(redirects.statuses, res.statusCode) && location !== undefined && request.redirect !== 'manual') {
        res.destroy();
        if (request.redirect === 'error') throw fetchFailed('redirect mode is "error"');
        if (hop >= redirects.max) throw fetchFailed(`more than ${redirects.max} redirects`);
        let next;
        try {
          next = snapshot(parseUrl(String(location), target.href));
        } catch {
          throw fetchFailed('invalid redirect location');
        }
        if (next.origin !== parts.origin || next.origin === 'null') {
          for (let i = 0; i < redirects.dropCrossOrigin.length; i += 1) {
            delete headers[redirects.dropCrossOrigin[i]];
          }
        }
        if (has(redirects.toGetAlways, res.statusCode)
          || (has(redirects.toGetAfterPost, res.statusCode) && method === 'POST')) {
          if (method !== 'HEAD') method = 'GET';
          body = null;
          for (let i = 0; i < BODY_HEADERS.length; i += 1) delete headers[BODY_HEADERS[i]];
        }
        parts = next;
        continue;
      }
      const raw = await abortable(readBody(res, policy), request.signal, req);
      const decoded = decodeBody(raw, res.headers['content-encoding'], policy);
      return toResponse(res, decoded, parts.href, hop > 0, method);
    }
  };
}
