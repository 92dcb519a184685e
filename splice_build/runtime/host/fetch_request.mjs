// fetch(input, init) → one plain request description, as the WHATWG Request constructor
// reads its arguments: the URL (parsed with the URL parser captured before the tool loaded),
// method, headers, redirect mode, signal and body. Each member is read once. Nothing here
// decides whether the request may be sent: the parent does (runtime/fetch_channel.py).
import { ACCESS_DENIED } from './codes.mjs';
import { headerPairs, isToken } from './fetch_headers.mjs';
import {
  ErrorCtor, SymbolToStringTag, TypeErrorCtor, URLCtor, Uint8ArrayCtor, abortSignalAborted,
  apply, arrayBufferByteLength, blobArrayBuffer, blobSize, blobType, byteLength, copyBytes,
  dataViewBuffer, dataViewByteLength, dataViewByteOffset, isView, safeString, setOwn, settle,
  stringToUpperCase, typedArrayBuffer, typedArrayByteLength, typedArrayByteOffset,
  typedArrayTag, typedArraySet, urlHref, urlSearchParamsToString, utf8Encode, web,
} from './pristine.mjs';

const NORMALIZED_METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT'];
const FORBIDDEN_METHODS = ['CONNECT', 'TRACE', 'TRACK'];
const REDIRECT_MODES = ['follow', 'error', 'manual'];
export const REQUEST_TOO_LARGE = 'ERR_SPLICE_REQUEST_TOO_LARGE';

function member(list, value) {
  for (let i = 0; i < list.length; i += 1) if (list[i] === value) return true;
  return false;
}

/** A denial raised by the host itself (reported like the parent's, ERR_ACCESS_DENIED). */
export function accessDenied(message) {
  const err = new ErrorCtor(message);
  setOwn(err, 'code', ACCESS_DENIED);
  return err;
}

/** The `TypeError('fetch failed')` of a network failure, its cause naming what happened. */
export function fetchFailed(message, code) {
  const cause = new ErrorCtor(message);
  if (code !== undefined && code !== null) setOwn(cause, 'code', code);
  return new TypeErrorCtor('fetch failed', { __proto__: null, cause });
}

function brand(getterFn, value) {
  try {
    apply(getterFn, value, []);
    return true;
  } catch {
    return false;
  }
}

function isAbortSignal(value) {
  return value !== null && typeof value === 'object' && brand(abortSignalAborted, value);
}

/** ``input`` is a URL instance: its href, read with the captured getter; else undefined. */
function urlInstanceHref(input) {
  try {
    return apply(urlHref, input, []);
  } catch {
    return undefined;
  }
}

/** The URL's href; as Node's fetch, a URL that does not parse is `TypeError('Failed to parse
 * URL from …')` whose cause is the URL parser's own `ERR_INVALID_URL`. */
function parseHref(text) {
  try {
    return apply(urlHref, new URLCtor(text), []);
  } catch (err) {
    throw new TypeErrorCtor(`Failed to parse URL from ${text}`, { __proto__: null, cause: err });
  }
}

function method(value) {
  const text = safeString(value);
  if (!isToken(text)) throw new TypeErrorCtor(`fetch: invalid method "${text}"`);
  const upper = apply(stringToUpperCase, text, []);
  if (member(FORBIDDEN_METHODS, upper)) throw new TypeErrorCtor(`fetch: method ${text} is not allowed`);
  return member(NORMALIZED_METHODS, upper) ? upper : text;
}

/** The bytes of a typed array or DataView (a copy), or undefined when ``value`` is neither. */
function viewBytes(value) {
  if (!isView(value)) return undefined;
  if (apply(typedArrayTag, value, []) !== undefined) {
    const view = new Uint8ArrayCtor(
      apply(typedArrayBuffer, value, []),
      apply(typedArrayByteOffset, value, []),
      apply(typedArrayByteLength, value, []),
    );
    return copyBytes(view);
  }
  return copyBytes(new Uint8ArrayCtor(
    apply(dataViewBuffer, value, []),
    apply(dataViewByteOffset, value, []),
    apply(dataViewByteLength, value, []),
  ));
}

/**
 * The body's bytes and default content type, ``{bytes, type}`` (``type`` null when the body
 * brings none), or a ``{stream}`` for a ReadableStream read later. TypeError for FormData.
 */
function extractBody(body) {
  if (typeof body === 'string') {
    return { __proto__: null, bytes: utf8Encode(body), type: 'text/plain;charset=UTF-8' };
  }
  if (body !== null && typeof body === 'object') {
    if (brand(urlSearchParamsToString, body)) {
      return {
        __proto__: null,
        bytes: utf8Encode(apply(urlSearchParamsToString, body, [])),
        type: 'application/x-www-form-urlencoded;charset=UTF-8',
      };
    }
    if (brand(arrayBufferByteLength, body)) {
      return { __proto__: null, bytes: copyBytes(new Uint8ArrayCtor(body)), type: null };
    }
    const view = viewBytes(body);
    if (view !== undefined) return { __proto__: null, bytes: view, type: null };
    if (brand(blobSize, body)) {
      const type = apply(blobType, body, []);
      return { __proto__: null, blob: body, type: type === '' ? null : type };
    }
    if (web.ready && brand(web.locked, body)) return { __proto__: null, stream: body, type: null };
    if (body[SymbolToStringTag] === 'FormData') {
      throw new TypeErrorCtor('fetch: FormData bodies are not supported in the Splice sandbox; send an encoded body');
    }
  }
  return { __proto__: null, bytes: utf8Encode(safeString(body)), type: 'text/plain;charset=UTF-8' };
}

/** All bytes of a body description (reads a Blob or stream), at most ``limit`` + 1 bytes. */
export async function bodyBytes(source, limit) {
  if (source.bytes !== undefined) return { __proto__: null, bytes: source.bytes };
  if (source.blob !== undefined) {
    const buffer = await settle(apply(blobArrayBuffer, source.blob, []));
    return { __proto__: null, bytes: copyBytes(new Uint8ArrayCtor(buffer)) };
  }
  const reader = apply(web.getReader, source.stream, []);
  const chunks = [];
  let count = 0;
  let total = 0;
  for (;;) {
    const step = await settle(apply(web.read, reader, []));
    if (step.done) break;
    const chunk = step.value;
    if (!isView(chunk) || apply(typedArrayTag, chunk, []) !== 'Uint8Array') {
      throw new TypeErrorCtor('fetch: a request body stream must yield Uint8Array chunks');
    }
    setOwn(chunks, count, copyBytes(chunk));
    count += 1;
    total += byteLength(chunk);
    if (total > limit) break;
  }
  const out = new Uint8ArrayCtor(total);
  let offset = 0;
  for (let i = 0; i < count; i += 1) {
    apply(typedArraySet, out, [chunks[i], offset]);
    offset += byteLength(chunks[i]);
  }
  return { __proto__: null, bytes: out };
}

function isRequestLike(input) {
  return input !== null && typeof input === 'object' && input[SymbolToStringTag] === 'Request';
}

/**
 * The request of ``fetch(input, init)``:
 * ``{url, method, headers: [[name, value]…], redirect, signal, body}`` (``body`` a
 * description for ``bodyBytes``, or null). Throws TypeError as the Request constructor does,
 * and the ERR_ACCESS_DENIED error for the refused ``dispatcher`` option.
 */
export function describe(input, init) {
  let urlText;
  let base = null; // the members of a Request given as input
  const href = input !== null && typeof input === 'object' ? urlInstanceHref(input) : undefined;
  if (href !== undefined) {
    urlText = href;
  } else if (isRequestLike(input)) {
    base = {
      __proto__: null,
      url: safeString(input.url),
      method: input.method,
      headers: input.headers,
      redirect: input.redirect,
      signal: input.signal,
      body: input.body,
    };
    urlText = base.url;
  } else {
    urlText = safeString(input);
  }
  if (init !== undefined && init !== null && typeof init !== 'object' && typeof init !== 'function') {
    throw new TypeErrorCtor('fetch: init must be an object');
  }
  const opts = init === undefined || init === null ? { __proto__: null } : init;
  if (opts.dispatcher !== undefined) {
    throw accessDenied('Access to the fetch dispatcher option is denied in the Splice sandbox');
  }
  const url = parseHref(urlText);
  const given = (name) => {
    const value = opts[name];
    return value !== undefined || base === null ? value : base[name];
  };
  const verb = method(given('method') ?? 'GET');
  const redirect = safeString(given('redirect') ?? 'follow');
  if (!member(REDIRECT_MODES, redirect)) throw new TypeErrorCtor(`fetch: invalid redirect mode "${redirect}"`);
  const signal = given('signal') ?? null;
  if (signal !== null && !isAbortSignal(signal)) throw new TypeErrorCtor('fetch: signal is not an AbortSignal');
  const headers = headerPairs(given('headers'));
  const rawBody = opts.body !== undefined ? opts.body : (base === null ? null : base.body);
  let body = null;
  if (rawBody !== undefined && rawBody !== null) {
    if (verb === 'GET' || verb === 'HEAD') throw new TypeErrorCtor('fetch: a GET or HEAD request cannot have a body');
    body = extractBody(rawBody);
    let typed = false;
    for (let i = 0; i < headers.length; i += 1) if (headers[i][0] === 'content-type') typed = true;
    if (!typed && body.type !== null) setOwn(headers, headers.length, ['content-type', body.type]);
  }
  return { __proto__: null, url, method: verb, headers, redirect, signal, body };
}
