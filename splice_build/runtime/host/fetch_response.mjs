// The Response of the sandbox's fetch (the WHATWG Response interface of a fetched
// response): status, statusText, ok, url, redirected, type, headers (immutable), body (a
// ReadableStream of Uint8Array chunks, or null), bodyUsed, arrayBuffer/bytes/text/json/blob,
// clone. Built from pristine functions only (pristine.mjs); the body is read through the
// reader methods captured before the tool loaded. `new Response()` by a tool is the global
// (undici) class; this one is made only by fetch.
import { getHeader, headersList, immutableHeaders } from './fetch_headers.mjs';
import {
  BlobCtor, SymbolToStringTag, TypeErrorCtor, Uint8ArrayCtor, apply, byteLength, parse,
  rejected, setOwn, settle, typedArrayBuffer, typedArraySet, utf8Decode, web,
} from './pristine.mjs';

const INTERNAL = Symbol('splice.response');

/**
 * Every chunk of ``stream`` (a pristine ReadableStream) in one fresh Uint8Array, boxed: an
 * async function's result is looked up for ``then``, so host values travel in null-prototype
 * boxes.
 */
async function readAll(stream) {
  const reader = apply(web.getReader, stream, []);
  const chunks = [];
  let count = 0;
  let total = 0;
  for (;;) {
    const step = await settle(apply(web.read, reader, []));
    if (step.done) break;
    const chunk = step.value;
    setOwn(chunks, count, chunk);
    count += 1;
    total += byteLength(chunk);
  }
  apply(web.releaseLock, reader, []);
  const out = new Uint8ArrayCtor(total);
  let offset = 0;
  for (let i = 0; i < count; i += 1) {
    apply(typedArraySet, out, [chunks[i], offset]);
    offset += byteLength(chunks[i]);
  }
  return { __proto__: null, bytes: out };
}

function unusable() {
  return new TypeErrorCtor('Body is unusable: Body has already been read');
}

export class Response {
  #status;
  #statusText;
  #headers;
  #url;
  #redirected;
  #body;
  #used = false;

  constructor(token, head = undefined, body = null) {
    if (token !== INTERNAL) throw new TypeErrorCtor('Illegal constructor');
    this.#status = head.status;
    this.#statusText = head.statusText;
    this.#headers = head.headers;
    this.#url = head.url;
    this.#redirected = head.redirected;
    this.#body = body;
  }

  get status() { return this.#status; }

  get statusText() { return this.#statusText; }

  get ok() { return this.#status >= 200 && this.#status <= 299; }

  get url() { return this.#url; }

  get redirected() { return this.#redirected; }

  get type() { return 'basic'; }

  get headers() { return this.#headers; }

  get body() { return this.#body; }

  get bodyUsed() {
    return this.#isUsed();
  }

  #isUsed() {
    return this.#used || (this.#body !== null && apply(web.locked, this.#body, []));
  }

  async #bytes() {
    if (this.#isUsed()) throw unusable();
    this.#used = true;
    if (this.#body === null) return { __proto__: null, bytes: new Uint8ArrayCtor(0) };
    return await settle(readAll(this.#body));
  }

  arrayBuffer() {
    return settle(this.#bytesThen((bytes) => apply(typedArrayBuffer, bytes, [])));
  }

  bytes() {
    return settle(this.#bytesThen((bytes) => bytes));
  }

  text() {
    return settle(this.#bytesThen((bytes) => utf8Decode(bytes)));
  }

  json() {
    return settle(this.#bytesThen((bytes) => parse(utf8Decode(bytes))));
  }

  blob() {
    const type = getHeader(this.#headers, 'content-type') ?? '';
    return settle(this.#bytesThen((bytes) => new BlobCtor(blobParts(bytes), { __proto__: null, type })));
  }

  formData() {
    return rejected(new TypeErrorCtor('Response.formData() is not supported in the Splice sandbox'));
  }

  async #bytesThen(convert) {
    const box = await settle(this.#bytes());
    return convert(box.bytes);
  }

  clone() {
    if (this.#isUsed()) throw unusable();
    let other = null;
    if (this.#body !== null) {
      const pair = apply(web.tee, this.#body, []);
      this.#body = pair[0];
      other = pair[1];
    }
    const head = {
      __proto__: null,
      status: this.#status,
      statusText: this.#statusText,
      headers: immutableHeaders(headersList(this.#headers)),
      url: this.#url,
      redirected: this.#redirected,
    };
    return new Response(INTERNAL, head, other);
  }

  get [SymbolToStringTag]() {
    return 'Response';
  }
}

/** A one-item sequence for the Blob constructor whose iteration touches no tool method. */
function blobParts(bytes) {
  let done = false;
  const iterator = {
    __proto__: null,
    next() {
      if (done) return { __proto__: null, value: undefined, done: true };
      done = true;
      return { __proto__: null, value: bytes, done: false };
    },
  };
  return { __proto__: null, [Symbol.iterator]: () => iterator };
}

/** The Response for a head (``{status, statusText, url, redirected, headers: list}``). */
export function makeResponse(head, body) {
  const full = {
    __proto__: null,
    status: head.status,
    statusText: head.statusText,
    url: head.url,
    redirected: head.redirected,
    headers: immutableHeaders(head.headers),
  };
  return new Response(INTERNAL, full, body);
}
