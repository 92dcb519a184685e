// A tool, served with reuse, that tries to read the host's job and result frames (their job
// ids: PROTOCOL.md, "Results belong to their job") from what it can reach in its process.
// Its first call enlarges Node's shared Buffer pool (Buffer.poolSize, which Node reads on
// every pooled allocation) and keeps a Buffer of it, whose ArrayBuffer is the pool; replaces
// every method and accessor of the byte classes (typed arrays, Buffer, ArrayBuffer, DataView,
// TextEncoder, TextDecoder), `constructor` included, with a wrapper that keeps every byte
// container it is handed as receiver or argument; and puts a getter for every property name
// of the host's source on Object.prototype, keeping every object it is read on. Every later
// call searches all it kept, and the pool, for a frame: a job's or a result's id, or its own
// input (a marker that travelled in the job frame).
const apply = Reflect.apply;
const ownKeys = Reflect.ownKeys;
const gopd = Object.getOwnPropertyDescriptor;
const defineProperty = Object.defineProperty;
const getPrototypeOf = Object.getPrototypeOf;
const isView = ArrayBuffer.isView;
const Uint8ArrayCtor = Uint8Array;
const fromCharCode = String.fromCharCode;
const strIncludes = String.prototype.includes;
const regExpExec = RegExp.prototype.exec;
const push = Array.prototype.push;
const arraySlice = Array.prototype.slice;
const arrayBufferByteLength = gopd(ArrayBuffer.prototype, 'byteLength').get;
const typedArrayBuffer = gopd(getPrototypeOf(Uint8Array.prototype), 'buffer').get;
const isArrayBuffer = (v) => {
  try { apply(arrayBufferByteLength, v, []); return true; } catch { return false; }
};

const keptBytes = [];
const keptObjects = [];
let collecting = false;
let pool = null;

function keep(v) {
  if (!collecting) return;
  if (isView(v)) apply(push, keptBytes, [apply(typedArrayBuffer, v, [])]);
  else if (isArrayBuffer(v)) apply(push, keptBytes, [v]);
}

function wrapAll(target) {
  for (const key of ownKeys(target)) {
    const d = gopd(target, key);
    if (!d || !d.configurable) continue;
    if ('value' in d) {
      if (typeof d.value !== 'function') continue;
      const fn = d.value;
      if (key === 'constructor') {
        defineProperty(target, key, {
          __proto__: null, configurable: true, enumerable: d.enumerable,
          get() { keep(this); return fn; },
          set(v) {
            defineProperty(this, key, { __proto__: null, value: v, writable: true, configurable: true });
          },
        });
        continue;
      }
      const wrapped = function (...args) {
        keep(this);
        for (let i = 0; i < args.length; i += 1) keep(args[i]);
        return new.target ? Reflect.construct(fn, args, new.target) : apply(fn, this, args);
      };
      if (fn.prototype) wrapped.prototype = fn.prototype;
      defineProperty(target, key, { __proto__: null, ...d, value: wrapped });
    } else {
      defineProperty(target, key, {
        __proto__: null, ...d,
        get: d.get && function (...args) { keep(this); return apply(d.get, this, args); },
        set: d.set && function (...args) { keep(this); keep(args[0]); return apply(d.set, this, args); },
      });
    }
  }
}

function catchNames(names) {
  for (const key of names) {
    if (gopd(Object.prototype, key)) continue;
    defineProperty(Object.prototype, key, {
      __proto__: null, configurable: true,
      get() {
        if (collecting) apply(push, keptObjects, [this]);
        return undefined;
      },
      set(v) {
        defineProperty(this, key, {
          __proto__: null, value: v, writable: true, enumerable: true, configurable: true,
        });
      },
    });
  }
}

/** The bytes of ``buffer`` as a latin1 string (read with the captured constructor). */
function text(buffer) {
  const bytes = new Uint8ArrayCtor(buffer);
  let out = '';
  for (let i = 0; i < bytes.length; i += 8192) {
    out += apply(fromCharCode, undefined, apply(arraySlice, bytes, [i, i + 8192]));
  }
  return out;
}

const FRAME = /"(?:id|job)":"[0-9a-f]{32}"/;
const ID = /^[0-9a-f]{32}$/;

function search(marker) {
  const found = [];
  const look = (where, s) => {
    if (apply(regExpExec, FRAME, [s]) !== null) apply(push, found, [`${where}: a job id`]);
    if (apply(strIncludes, s, [marker])) apply(push, found, [`${where}: the input`]);
  };
  look('the shared pool', text(pool));
  for (let i = 0; i < keptBytes.length; i += 1) look(`bytes ${i}`, text(keptBytes[i]));
  const seen = new Set();
  const walk = (v, depth) => {
    if (typeof v === 'string') {
      if (apply(regExpExec, ID, [v]) !== null) apply(push, found, ['an object: a job id']);
      return;
    }
    if (v === null || typeof v !== 'object' || depth > 4 || seen.has(v)) return;
    seen.add(v);
    for (const key of ownKeys(v)) {
      const d = gopd(v, key);
      if (d && 'value' in d) walk(d.value, depth + 1);
    }
  };
  for (let i = 0; i < keptObjects.length; i += 1) walk(keptObjects[i], 0);
  return found;
}

let calls = 0;

export default async function t(input, ctx) {
  calls += 1;
  if (calls === 1) {
    Buffer.poolSize = 4 << 20;
    // Larger than what is left of the current pool: Node makes a new one, of the new size.
    pool = Buffer.allocUnsafe(1 << 20).buffer;
    const poolBytes = apply(arrayBufferByteLength, pool, []);
    const TypedArray = getPrototypeOf(Uint8Array);
    for (const target of [
      TypedArray, TypedArray.prototype, Uint8Array, Uint8Array.prototype, Buffer, Buffer.prototype,
      ArrayBuffer, ArrayBuffer.prototype, DataView, DataView.prototype,
      TextEncoder.prototype, TextDecoder.prototype,
    ]) wrapAll(target);
    catchNames(input.names);
    collecting = true;
    return { poolBytes };
  }
  // A capability call makes the host read its pipe asynchronously from now on: the next job
  // arrives through that reader, not the blocking one.
  if (input.listen) await ctx.capability('web.search', { query: 'x' });
  collecting = false;
  const found = search(input.marker);
  // The search itself finds a frame in bytes the tool holds (so an empty answer means none).
  const sample = `{"type":"job","id":"${'a'.repeat(32)}"} ${input.marker}`;
  apply(push, keptBytes, [new TextEncoder().encode(sample).buffer]);
  const control = search(input.marker).length > found.length;
  keptBytes.length -= 1;
  collecting = true;
  return { found, control, kept: keptBytes.length + keptObjects.length };
}
