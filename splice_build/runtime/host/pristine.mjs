// Pristine references captured before any tool code runs (imported first by host.mjs).
// A tool can overwrite JSON.stringify, Object.defineProperty, Reflect.apply or add getters to
// prototypes; the host only ever uses the functions captured here, called through Reflect.apply.
import fs from 'node:fs';

export const apply = Reflect.apply;
export const stringify = JSON.stringify;
export const parse = JSON.parse;
export const defineProperty = Object.defineProperty;
export const freeze = Object.freeze;
export const keys = Object.keys;
export const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const StringCtor = String;
export const MapCtor = Map;
export const mapGet = Map.prototype.get;
export const mapSet = Map.prototype.set;
export const mapDelete = Map.prototype.delete;
export const PromiseCtor = Promise;
export const BufferFrom = Buffer.from;
export const bufferByteLength = Buffer.byteLength;
export const bufferConcat = Buffer.concat;
export const bufferAlloc = Buffer.alloc;
export const bufferIndexOf = Buffer.prototype.indexOf;
export const bufferToString = Buffer.prototype.toString;
export const bufferSubarray = Buffer.prototype.subarray;
export const stringStartsWith = String.prototype.startsWith;
export const stringSlice = String.prototype.slice;
export const arrayIncludes = Array.prototype.includes;
export const writeSync = fs.writeSync;
export const readSync = fs.readSync;
export const read = fs.read;
export const reallyExit = process.reallyExit;
export const processOn = process.on;

/** Call ``fn`` with ``self`` and an argument list without touching Function.prototype.call. */
export function call(fn, self, args) {
  return apply(fn, self, args);
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
