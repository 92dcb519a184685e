// The Headers of the sandbox's fetch (WHATWG Headers, docs/network-security.md), and the
// header checks the fetch shim applies to a request. Built only from pristine functions:
// a tool may replace any prototype method before a response is made, and host code never
// looks one up (pristine.mjs). Names are stored lower-case; iteration is sorted by name with
// values of one name combined by ", " (except set-cookie), as the standard says.
import {
  SymbolIterator, SymbolToStringTag, TypeErrorCtor, apply, getOwnPropertyDescriptor, ownKeys,
  safeString, setOwn, stringCharCodeAt, stringSlice, stringToLowerCase,
} from './pristine.mjs';

// RFC 9110 tchar: ! # $ % & ' * + - . ^ _ ` | ~ DIGIT ALPHA
function isTokenChar(c) {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)
    || c === 0x21 || (c >= 0x23 && c <= 0x27) || c === 0x2a || c === 0x2b || c === 0x2d
    || c === 0x2e || c === 0x5e || c === 0x5f || c === 0x60 || c === 0x7c || c === 0x7e;
}

/** True when ``text`` is a non-empty HTTP token (a header name, a method). */
export function isToken(text) {
  if (text.length === 0) return false;
  for (let i = 0; i < text.length; i += 1) {
    if (!isTokenChar(apply(stringCharCodeAt, text, [i]))) return false;
  }
  return true;
}

/** A valid header name, lower-cased; TypeError otherwise. */
export function headerName(value) {
  const name = safeString(value);
  if (!isToken(name)) throw new TypeErrorCtor(`Headers: invalid header name "${name}"`);
  return apply(stringToLowerCase, name, []);
}

function isWhitespace(c) {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/** A header value without leading/trailing whitespace; TypeError for NUL, CR, LF, > 0xFF. */
export function headerValue(value) {
  const text = safeString(value);
  let start = 0;
  let end = text.length;
  while (start < end && isWhitespace(apply(stringCharCodeAt, text, [start]))) start += 1;
  while (end > start && isWhitespace(apply(stringCharCodeAt, text, [end - 1]))) end -= 1;
  for (let i = start; i < end; i += 1) {
    const c = apply(stringCharCodeAt, text, [i]);
    if (c === 0 || c === 0x0a || c === 0x0d || c > 0xff) {
      throw new TypeErrorCtor('Headers: invalid header value');
    }
  }
  return start === 0 && end === text.length ? text : apply(stringSlice, text, [start, end]);
}

/** The elements of a tool-given sequence, through its own iterator (WebIDL sequence). */
function sequence(value, what) {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
    throw new TypeErrorCtor(`${what} is not a sequence`);
  }
  const method = value[SymbolIterator];
  if (typeof method !== 'function') throw new TypeErrorCtor(`${what} is not iterable`);
  const iterator = apply(method, value, []);
  const next = iterator.next;
  const out = [];
  let n = 0;
  for (;;) {
    const step = apply(next, iterator, []);
    if (step.done) return out;
    setOwn(out, n, step.value);
    n += 1;
  }
}

let listOf;
let makeHeaders;

/**
 * ``init`` (a Headers, a sequence of pairs or a record, as WHATWG HeadersInit) as a list
 * ``[[name, value], …]`` of checked, lower-cased pairs, in the given order.
 */
export function headerPairs(init) {
  const out = [];
  let n = 0;
  const add = (name, value) => {
    setOwn(out, n, [headerName(name), headerValue(value)]);
    n += 1;
  };
  if (init === undefined || init === null) return out;
  const own = listOf(init);
  if (own !== undefined) {
    for (let i = 0; i < own.length; i += 1) add(own[i][0], own[i][1]);
    return out;
  }
  if (typeof init !== 'object' && typeof init !== 'function') {
    throw new TypeErrorCtor('Headers: init must be an object');
  }
  if (typeof init[SymbolIterator] === 'function') {
    const items = sequence(init, 'Headers init');
    for (let i = 0; i < items.length; i += 1) {
      const pair = sequence(items[i], 'a header pair');
      if (pair.length !== 2) throw new TypeErrorCtor('Headers: a pair must have two items');
      add(pair[0], pair[1]);
    }
    return out;
  }
  const names = ownKeys(init);
  for (let i = 0; i < names.length; i += 1) {
    const key = names[i];
    const d = getOwnPropertyDescriptor(init, key);
    if (d !== undefined && d.enumerable && typeof key === 'string') add(key, init[key]);
  }
  return out;
}

/** The list as the standard iterates it: sorted, one entry per name (set-cookie apart). */
function sortedEntries(list) {
  const sorted = [];
  let n = 0;
  for (let i = 0; i < list.length; i += 1) {
    const pair = list[i];
    let j = n;
    while (j > 0 && sorted[j - 1][0] > pair[0]) {
      setOwn(sorted, j, sorted[j - 1]);
      j -= 1;
    }
    setOwn(sorted, j, pair);
    n += 1;
  }
  const out = [];
  let m = 0;
  for (let i = 0; i < n; i += 1) {
    const name = sorted[i][0];
    if (m > 0 && out[m - 1][0] === name && name !== 'set-cookie') {
      out[m - 1][1] = `${out[m - 1][1]}, ${sorted[i][1]}`;
    } else {
      setOwn(out, m, [name, sorted[i][1]]);
      m += 1;
    }
  }
  return out;
}

class HeadersIterator {
  #entries;
  #kind;
  #index = 0;

  constructor(entries, kind) {
    this.#entries = entries;
    this.#kind = kind;
  }

  next() {
    if (this.#index >= this.#entries.length) return { value: undefined, done: true };
    const pair = this.#entries[this.#index];
    this.#index += 1;
    if (this.#kind === 'key') return { value: pair[0], done: false };
    if (this.#kind === 'value') return { value: pair[1], done: false };
    return { value: [pair[0], pair[1]], done: false };
  }

  [SymbolIterator]() {
    return this;
  }

  get [SymbolToStringTag]() {
    return 'Headers Iterator';
  }
}

export class Headers {
  #list = [];
  #immutable = false;

  constructor(init = undefined) {
    this.#list = headerPairs(init);
  }

  #check() {
    if (this.#immutable) throw new TypeErrorCtor('Headers: immutable');
  }

  #remove(name) {
    const kept = [];
    let n = 0;
    for (let i = 0; i < this.#list.length; i += 1) {
      if (this.#list[i][0] !== name) {
        setOwn(kept, n, this.#list[i]);
        n += 1;
      }
    }
    this.#list = kept;
  }

  append(name, value) {
    this.#check();
    setOwn(this.#list, this.#list.length, [headerName(name), headerValue(value)]);
  }

  set(name, value) {
    this.#check();
    const key = headerName(name);
    const text = headerValue(value);
    this.#remove(key);
    setOwn(this.#list, this.#list.length, [key, text]);
  }

  delete(name) {
    this.#check();
    this.#remove(headerName(name));
  }

  get(name) {
    const key = headerName(name);
    let out = null;
    for (let i = 0; i < this.#list.length; i += 1) {
      if (this.#list[i][0] === key) out = out === null ? this.#list[i][1] : `${out}, ${this.#list[i][1]}`;
    }
    return out;
  }

  has(name) {
    const key = headerName(name);
    for (let i = 0; i < this.#list.length; i += 1) if (this.#list[i][0] === key) return true;
    return false;
  }

  getSetCookie() {
    const out = [];
    let n = 0;
    for (let i = 0; i < this.#list.length; i += 1) {
      if (this.#list[i][0] === 'set-cookie') {
        setOwn(out, n, this.#list[i][1]);
        n += 1;
      }
    }
    return out;
  }

  forEach(callback, thisArg = undefined) {
    if (typeof callback !== 'function') throw new TypeErrorCtor('Headers.forEach: callback is not a function');
    const entries = sortedEntries(this.#list);
    for (let i = 0; i < entries.length; i += 1) apply(callback, thisArg, [entries[i][1], entries[i][0], this]);
  }

  keys() {
    return new HeadersIterator(sortedEntries(this.#list), 'key');
  }

  values() {
    return new HeadersIterator(sortedEntries(this.#list), 'value');
  }

  entries() {
    return new HeadersIterator(sortedEntries(this.#list), 'key+value');
  }

  [SymbolIterator]() {
    return new HeadersIterator(sortedEntries(this.#list), 'key+value');
  }

  get [SymbolToStringTag]() {
    return 'Headers';
  }

  static {
    listOf = (value) => (
      value !== null && typeof value === 'object' && #list in value ? value.#list : undefined
    );
    makeHeaders = (list) => {
      const headers = new Headers();
      headers.#list = list;
      headers.#immutable = true;
      return headers;
    };
  }
}

/** An immutable Headers holding ``list`` (``[[name, value], …]``, already checked). */
export function immutableHeaders(list) {
  return makeHeaders(list);
}

/** ``headers.get(name)`` for host code (the public method may have been replaced). */
export function getHeader(headers, name) {
  const list = listOf(headers);
  let out = null;
  for (let i = 0; i < list.length; i += 1) {
    if (list[i][0] === name) out = out === null ? list[i][1] : `${out}, ${list[i][1]}`;
  }
  return out;
}

/** A copy of ``headers``'s list (for a clone). */
export function headersList(headers) {
  const list = listOf(headers);
  const out = [];
  for (let i = 0; i < list.length; i += 1) setOwn(out, i, [list[i][0], list[i][1]]);
  return out;
}
