// A tool that replaces every replaceable function and accessor of every global constructor,
// prototype and intrinsic it can reach (and getters/setters for every property name the
// host's source uses, on Object.prototype and Array.prototype), then uses fetch,
// capabilities, ctx.log and its result. Each replacement records a call made directly by
// host code (the first located stack frame below the replacement is in the host
// directory); at the end the tool returns those whose receiver is not an object it created
// or received (a promise resolved with a Response looks the Response up for `then`: the
// Response is the tool's by then).
const apply = Reflect.apply;
const ownKeys = Reflect.ownKeys;
const gopd = Object.getOwnPropertyDescriptor;
const defineProperty = Object.defineProperty;
const getPrototypeOf = Object.getPrototypeOf;
const ErrorCtor = Error;
const WeakSetCtor = WeakSet;
const weakAdd = WeakSet.prototype.add;
const weakHas = WeakSet.prototype.has;
const strIncludes = String.prototype.includes;
const strSplit = String.prototype.split;
const strTrim = String.prototype.trim;
const strStartsWith = String.prototype.startsWith;
const strIndexOf = String.prototype.indexOf;
const strSlice = String.prototype.slice;
const push = Array.prototype.push;
const StringCtor = String;
const stackGetter = () => new ErrorCtor().stack;
ErrorCtor.stackTraceLimit = 40;

const known = new WeakSetCtor();
const records = [];
let checking = false;
let hostMarker = '';
let toolMarker = '';

function isObject(v) {
  return (typeof v === 'object' && v !== null) || typeof v === 'function';
}

function keep(v) {
  if (isObject(v)) apply(weakAdd, known, [v]);
  return v;
}

const OWN_FRAMES = ['check', 'firstLocatedFrame', 'stackGetter', 'wrapped', 'get', 'set'];

/** The function name of a stack line: "at Object.get [as then] (…)" → "get". */
function frameName(line) {
  let name = apply(strSlice, line, [3]);
  const paren = apply(strIndexOf, name, [' (']);
  if (paren >= 0) name = apply(strSlice, name, [0, paren]);
  const alias = apply(strIndexOf, name, [' [as ']);
  if (alias >= 0) name = apply(strSlice, name, [0, alias]);
  for (let i = name.length - 1; i >= 0; i -= 1) if (name[i] === '.') return apply(strSlice, name, [i + 1]);
  return name;
}

function firstLocatedFrame() {
  const lines = apply(strSplit, stackGetter(), ['\n']);
  for (let i = 1; i < lines.length; i += 1) {
    const line = apply(strTrim, lines[i], []);
    if (apply(strIncludes, line, [toolMarker])) {
      let own = false;
      for (const name of OWN_FRAMES) if (frameName(line) === name) own = true;
      if (own) continue; // a replacement or this checker
      return line; // the tool's own code
    }
    if (apply(strIncludes, line, ['<anonymous>'])) continue; // a builtin (Array.from, new Promise)
    if (!apply(strIncludes, line, ['('])
      && !apply(strStartsWith, line, ['at file:']) && !apply(strStartsWith, line, ['at node:'])) continue;
    return line;
  }
  return '';
}

function check(label, self) {
  if (checking || hostMarker === '') return;
  checking = true;
  try {
    const frame = firstLocatedFrame();
    if (apply(strIncludes, frame, [hostMarker])) apply(push, records, [{ label, frame, self }]);
  } finally {
    checking = false;
  }
}

function wrapFunction(fn, label) {
  const wrapped = function (...args) {
    check(label, this);
    return new.target ? Reflect.construct(fn, args, new.target) : apply(fn, this, args);
  };
  return wrapped;
}

function poisonObject(target, label, seen) {
  if (!isObject(target) || apply(weakHas, seen, [target])) return;
  apply(weakAdd, seen, [target]);
  for (const key of ownKeys(target)) {
    const d = gopd(target, key);
    if (!d || !d.configurable) continue;
    const name = `${label}.${StringCtor(typeof key === 'symbol' ? key.description : key)}`;
    if ('value' in d) {
      if (key !== 'constructor' && typeof d.value === 'function' && !isObject(d.value.prototype)) {
        defineProperty(target, key, { __proto__: null, ...d, value: wrapFunction(d.value, name) });
      } else if (key === 'constructor') {
        const value = d.value;
        defineProperty(target, key, {
          __proto__: null,
          configurable: true,
          enumerable: d.enumerable,
          get() { check(`${name} get`, this); return value; },
          set(v) { defineProperty(this, key, { __proto__: null, value: v, writable: true, configurable: true }); },
        });
      }
    } else {
      defineProperty(target, key, {
        __proto__: null,
        ...d,
        get: d.get && wrapFunction(d.get, `${name} get`),
        set: d.set && wrapFunction(d.set, `${name} set`),
      });
    }
  }
}

function poisonNames(target, label, names) {
  for (const key of names) {
    if (gopd(target, key)) continue;
    defineProperty(target, key, {
      __proto__: null,
      configurable: true,
      get() { check(`${label}.${key} get`, this); return undefined; },
      set(v) {
        check(`${label}.${key} set`, this);
        defineProperty(this, key, {
          __proto__: null, value: v, writable: true, enumerable: true, configurable: true,
        });
      },
    });
  }
}

function intrinsics() {
  const out = [];
  const add = (v) => apply(push, out, [v]);
  for (const key of ownKeys(globalThis)) {
    let v;
    try { v = globalThis[key]; } catch { continue; }
    if (!isObject(v) || v === globalThis) continue;
    add(v);
    if (isObject(v.prototype)) add(v.prototype);
  }
  const proto = (v) => getPrototypeOf(v);
  add(proto(Uint8Array)); add(proto(Uint8Array.prototype));
  add(proto([][Symbol.iterator]())); add(proto(proto([][Symbol.iterator]())));
  add(proto(new Map().entries())); add(proto(new Set().values())); add(proto(''[Symbol.iterator]()));
  add(proto(/a/[Symbol.matchAll]('a')));
  add(proto(function* g() {})); add(proto(function* g() {}).prototype);
  add(proto(async function* g() {})); add(proto(async function* g() {}).prototype);
  add(proto(async () => {}));
  const stream = new ReadableStream({ start(c) { add(proto(c)); } });
  const reader = stream.getReader(); add(proto(reader)); reader.releaseLock();
  add(Buffer); add(Buffer.prototype);
  return out;
}

// The promise the host awaits is one the tool holds (it is the tool's, like any result).
export default (input, ctx) => keep(main(input, ctx));

async function main(input, ctx) {
  hostMarker = input.hostUrl;
  toolMarker = input.toolUrl;
  keep(input); keep(ctx); keep(ctx.capability); keep(ctx.log);
  const out = { checks: {} };
  // touch lazily loaded globals first, so their real values are what gets wrapped
  void Response; void Headers; void Request; void FormData;
  const hostMarkerCopy = hostMarker;
  hostMarker = '';
  const seen = new WeakSetCtor();
  for (const target of intrinsics()) {
    const named = typeof target === 'function' ? gopd(target, 'name') : undefined;
    poisonObject(target, (named && named.value) || 'intrinsic', seen);
  }
  poisonNames(Object.prototype, 'Object.prototype', input.names);
  poisonNames(Array.prototype, 'Array.prototype', input.indexes);
  hostMarker = hostMarkerCopy;

  // 1. fetch: POST with headers and a body, JSON back
  const init = keep({ method: 'POST', headers: keep({ 'x-a': '1' }), body: 'data' });
  const p1 = keep(fetch(input.echo, init));
  const r1 = keep(await p1);
  keep(r1.headers);
  const p1j = keep(r1.json());
  const j1 = keep(await p1j);
  out.checks.post = [r1.status, j1.method, j1.body, j1.headers['x-a']];
  // the host's own classes too, now that a Response exists
  poisonObject(getPrototypeOf(r1), 'Response.prototype', seen);
  poisonObject(getPrototypeOf(r1.headers), 'Headers.prototype', seen);
  // 2. a streamed body, read chunk by chunk
  const r2 = keep(await keep(fetch(input.big)));
  const body = keep(r2.body);
  const rd = keep(body.getReader());
  let bytes = 0;
  for (;;) {
    const step = keep(await keep(rd.read()));
    if (step.done) break;
    keep(step.value);
    bytes += step.value.byteLength;
  }
  out.checks.streamed = bytes;
  const r3 = keep(await keep(fetch(input.echo)));
  out.checks.text = (await keep(r3.text())).length > 0;
  out.checks.headersIter = [...keep(r3.headers)].length > 0;
  // 3. a refusal and a failure
  try { await keep(fetch(input.denied)); } catch (e) { keep(e); out.checks.denied = e.code; }
  try { await keep(fetch(input.refused)); } catch (e) { keep(e); keep(e.cause); out.checks.failed = [e.message, e.cause.code]; }
  // 4. capabilities and logs
  const cp = keep(ctx.capability('web.search', keep({ query: 'x' })));
  const c = keep(await cp);
  out.checks.capability = c.status;
  keep(ctx.log('hello from the poisoned tool', keep({ a: 1 })));
  const found = [];
  for (const r of records) {
    if (!(isObject(r.self) && apply(weakHas, known, [r.self]))) {
      apply(push, found, [{ label: r.label, frame: r.frame, self: typeof r.self }]);
    }
  }
  out.records = found;
  return out;
}
