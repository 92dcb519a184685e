// Pristine references captured before any tool code runs (imported first by host.mjs).
//
// Host code (channel, capability client, fetch shim, logs, result) calls only what is
// captured here, through `apply` (Reflect.apply), and never a method looked up on an object
// at run time: a tool may replace any prototype method, getter, `Symbol.iterator`,
// `Symbol.species`, `Promise.prototype.then`/`constructor` or `toJSON` before the host uses
// it. The rules host code follows (tests/runtime/test_host_intrinsics.py checks them):
// - its own objects are null-prototype (`{ __proto__: null, … }`) or class instances with
//   private fields, so a read of a missing key or a write never reaches a tool getter/setter;
// - no `for…of`, spread or array destructuring (iterators); arrays are indexed in bounds;
// - a promise is awaited only after `settle(p)` gives it an own `constructor`, so `await`
//   never reads `Promise.prototype.constructor`; `then` is never called;
// - promises are resolved only with primitives, null-prototype objects or values that are
//   the tool's own anyway.

// Built-in modules are taken with process.getBuiltinModule (captured here, before harden.mjs
// puts the module guard in front of it), never with `import`: an ES import of a built-in
// builds its namespace by reading every export, and reading `fs.promises` loads
// fs/promises, readline and the streams. A sandbox runs with
// --disallow-code-generation-from-strings, under which V8 refuses Node's code cache, so every
// internal module loaded is compiled from source: that import alone cost each call ~8 ms.
const getBuiltinModule = process.getBuiltinModule;

/** The exports of an allowed or host-only built-in module (``node:fs``, ``node:stream``…). */
export function builtin(id) {
  return Reflect.apply(getBuiltinModule, process, [id]);
}

const fs = builtin('node:fs');

export const apply = Reflect.apply;
export const construct = Reflect.construct;
export const ownKeys = Reflect.ownKeys;
export const stringify = JSON.stringify;
export const parse = JSON.parse;
export const defineProperty = Object.defineProperty;
export const freeze = Object.freeze;
export const keys = Object.keys;
export const hasOwn = Object.hasOwn;
export const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
export const getPrototypeOf = Object.getPrototypeOf;
export const isArray = Array.isArray;
export const StringCtor = String;
export const NumberCtor = Number;
export const ErrorCtor = Error;
export const TypeErrorCtor = TypeError;
export const RangeErrorCtor = RangeError;
export const MapCtor = Map;
export const mapGet = Map.prototype.get;
export const mapSet = Map.prototype.set;
export const mapHas = Map.prototype.has;
export const mapDelete = Map.prototype.delete;
export const WeakSetCtor = WeakSet;
export const weakSetAdd = WeakSet.prototype.add;
export const weakSetHas = WeakSet.prototype.has;
export const PromiseCtor = Promise;
export const promiseReject = Promise.reject;
export const bufferByteLength = Buffer.byteLength;
export const Uint8ArrayCtor = Uint8Array;
const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);
const getter = (proto, name) => Object.getOwnPropertyDescriptor(proto, name).get;
export const typedArraySet = TypedArrayPrototype.set;
export const typedArrayIndexOf = TypedArrayPrototype.indexOf;
export const typedArrayBuffer = getter(TypedArrayPrototype, 'buffer');
export const typedArrayByteOffset = getter(TypedArrayPrototype, 'byteOffset');
export const typedArrayByteLength = getter(TypedArrayPrototype, 'byteLength');
export const typedArrayTag = getter(TypedArrayPrototype, Symbol.toStringTag);
export const dataViewBuffer = getter(DataView.prototype, 'buffer');
export const dataViewByteOffset = getter(DataView.prototype, 'byteOffset');
export const dataViewByteLength = getter(DataView.prototype, 'byteLength');
export const arrayBufferByteLength = getter(ArrayBuffer.prototype, 'byteLength');
export const isView = ArrayBuffer.isView;
export const stringStartsWith = String.prototype.startsWith;
export const stringEndsWith = String.prototype.endsWith;
export const stringSlice = String.prototype.slice;
export const stringIndexOf = String.prototype.indexOf;
export const stringToLowerCase = String.prototype.toLowerCase;
export const stringToUpperCase = String.prototype.toUpperCase;
export const stringCharCodeAt = String.prototype.charCodeAt;
export const stringToWellFormed = String.prototype.toWellFormed;
export const arrayIncludes = Array.prototype.includes;
export const URLCtor = URL;
export const urlCanParse = URL.canParse;
export const urlHref = getter(URL.prototype, 'href');
export const urlProtocol = getter(URL.prototype, 'protocol');
export const urlHostname = getter(URL.prototype, 'hostname');
export const urlPathname = getter(URL.prototype, 'pathname');
export const decodeUriComponent = decodeURIComponent;
export const urlSearchParamsToString = URLSearchParams.prototype.toString;
export const BlobCtor = Blob;
export const blobArrayBuffer = Blob.prototype.arrayBuffer;
export const blobType = getter(Blob.prototype, 'type');
export const blobSize = getter(Blob.prototype, 'size');
export const abortSignalAborted = getter(AbortSignal.prototype, 'aborted');
export const abortSignalReason = getter(AbortSignal.prototype, 'reason');
export const addEventListener = EventTarget.prototype.addEventListener;
export const removeEventListener = EventTarget.prototype.removeEventListener;
export const SymbolIterator = Symbol.iterator;
export const SymbolToStringTag = Symbol.toStringTag;
export const symbolDescription = getter(Symbol.prototype, 'description');
const textDecoder = new TextDecoder();
const textDecode = TextDecoder.prototype.decode;
const textEncoder = new TextEncoder();
const textEncode = TextEncoder.prototype.encode;
export const base64Slice = Buffer.prototype.base64Slice;
export const formatWithOptions = process.getBuiltinModule('node:util').formatWithOptions;
export const isProxy = process.getBuiltinModule('node:util').types.isProxy;
export const writeSync = fs.writeSync;
// The job channel's reads and writes (channel.mjs): the vector forms take an array of views
// and hand it to the binding as is, where readSync, read and writeSync (with a buffer) read
// the buffer's `byteLength` getter, which a tool may replace to catch the host's buffers.
export const readvSync = fs.readvSync;
export const readv = fs.readv;
export const writevSync = fs.writevSync;
export const reallyExit = process.reallyExit;
// What a kept process's result waits on (host.mjs, ``fileRequestsDone``).
export const getActiveResourcesInfo = process.getActiveResourcesInfo;
export const setTimer = setTimeout;
// Node's handler of every uncaught exception and unhandled rejection, which the C++ side looks
// up on `process` each time, and the setter of the hook it calls (harden.mjs, lockFailureHandler).
export const fatalException = process._fatalException;
export const setUncaughtExceptionCaptureCallback = process.setUncaughtExceptionCaptureCallback;
export const nextTick = process.nextTick;

/**
 * The web streams the fetch shim needs, captured on request (host.mjs asks for them before
 * the tool loads when the package may use the network: loading them costs a few ms).
 */
export const web = { __proto__: null, ready: false };
export function captureWebStreams() {
  const RS = ReadableStream;
  const reader = new RS().getReader();
  const controllerProto = (() => {
    let found;
    new RS({ start(c) { found = getPrototypeOf(c); } });
    return found;
  })();
  web.ReadableStream = RS;
  web.getReader = RS.prototype.getReader;
  web.cancel = RS.prototype.cancel;
  web.tee = RS.prototype.tee;
  web.locked = getter(RS.prototype, 'locked');
  web.read = getPrototypeOf(reader).read;
  web.releaseLock = getPrototypeOf(reader).releaseLock;
  web.readerCancel = getPrototypeOf(reader).cancel;
  web.enqueue = controllerProto.enqueue;
  web.close = controllerProto.close;
  web.error = controllerProto.error;
  web.desiredSize = getter(controllerProto, 'desiredSize');
  web.ready = true;
  freeze(web);
}

/** Call ``fn`` with ``self`` and an argument list without touching Function.prototype.call. */
export function call(fn, self, args) {
  return apply(fn, self, args);
}

/**
 * ``promise`` with an own ``constructor``: ``await`` then takes it as is and never reads
 * ``Promise.prototype.constructor`` (a getter a tool may have installed).
 */
export function settle(promise) {
  defineProperty(promise, 'constructor', { __proto__: null, value: PromiseCtor });
  return promise;
}

/** A new promise and its resolvers, the promise settled (see ``settle``). */
export function deferred() {
  const box = { __proto__: null, promise: undefined, resolve: undefined, reject: undefined };
  box.promise = settle(new PromiseCtor((resolve, reject) => {
    box.resolve = resolve;
    box.reject = reject;
  }));
  return box;
}

/** A rejected promise, made with the captured Promise.reject. */
export function rejected(error) {
  return settle(apply(promiseReject, PromiseCtor, [error]));
}

/** Own, enumerable, writable property (what an assignment would make, without setters). */
export function setOwn(obj, key, value) {
  defineProperty(obj, key, {
    __proto__: null, value, writable: true, enumerable: true, configurable: true,
  });
}

/** ``String(value)`` that never throws (a hostile ``toString`` getter is replaced by a marker). */
export function safeString(value) {
  try {
    return apply(StringCtor, undefined, [value]);
  } catch {
    return '[unprintable value]';
  }
}

/** Read ``obj[key]`` without letting a throwing getter escape. */
export function safeGet(obj, key) {
  try {
    return obj == null ? undefined : obj[key];
  } catch {
    return undefined;
  }
}

/** UTF-8 bytes → text (a leading BOM removed, invalid sequences replaced, as WHATWG decodes). */
export function utf8Decode(bytes) {
  return apply(textDecode, textDecoder, [bytes]);
}

/** Text → a fresh Uint8Array of its UTF-8 bytes. */
export function utf8Encode(text) {
  return apply(textEncode, textEncoder, [text]);
}

/** The length of a typed array or Buffer (``.length`` is a prototype getter a tool may replace). */
export function byteLength(bytes) {
  return apply(typedArrayByteLength, bytes, []);
}

/**
 * ``length`` bytes of ``bytes`` from ``start``, as a new Uint8Array over the same memory, made
 * with the captured constructor: ``subarray`` looks up ``constructor`` and ``Symbol.species``,
 * and Buffer's reads the ``buffer`` and ``byteOffset`` getters, all of which a tool may replace.
 */
export function view(bytes, start, length) {
  const offset = apply(typedArrayByteOffset, bytes, []);
  return new Uint8ArrayCtor(apply(typedArrayBuffer, bytes, []), offset + start, length);
}

/** A copy of ``bytes`` (a Buffer or any Uint8Array) in a fresh, unshared Uint8Array. */
export function copyBytes(bytes) {
  const out = new Uint8ArrayCtor(byteLength(bytes));
  apply(typedArraySet, out, [bytes]);
  return out;
}
