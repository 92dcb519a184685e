// The descriptor guard: a tool names only file descriptors that are its own.
//
// Node's permission model checks paths, never descriptors, and every descriptor of the
// process is a small number a tool can guess. Node's own are among them: libuv's wake-up and
// signal pipes, whose reader takes the bytes it reads for a pointer and calls through it (16
// bytes written to one crash the process; with a known address they would run native code),
// and its epoll, eventfd and io_uring descriptors. So every `node:fs` function that is given
// a number as its first argument (every one that takes a descriptor: read, write, fstat,
// close, readFileSync(fd)…) refuses it with ERR_ACCESS_DENIED unless it is one the tool may
// use: 0, 1 and 2 (/dev/null and the log pipes), the job channel's two pipes (PROTOCOL.md
// says why the tool may write them), and one the tool opened with `fs.open`/`fs.openSync`
// and has not closed. Streams and `fs.Utf8Stream` given a descriptor go through the same
// functions (they call the module's `read`, `write`, `close`… when they run).
//
// A `FileHandle` (fs/promises) holds its descriptor in `fd`, which Node reads from whatever
// object it is handed: an object made from a real handle with its own `fd` reached any
// descriptor. So a handle's methods, and the fs/promises functions that take a handle, accept
// only a handle `open` returned, and nothing that merely inherits from one. The handle itself
// keeps its descriptor in a writable own property (`kFd`) that `fd` returns: a tool that set
// it, or defined its own `fd` on the handle, made a real handle write any descriptor. So each
// handle `open` returns has both as fixed accessors over the number it opened, which Node
// may only set to -1 (its close). Behind each handle, under a symbol-keyed property Node's
// own methods read (`kHandle`), is the C++ FileHandle: its class, reached through the
// prototype's `constructor`, made a handle of any number it was given (`new C(3)`), then
// read that descriptor (`readStart`) or closed it (the job channel, libuv's pipes). Every
// `constructor` on that object's prototype chain is a function that refuses.
//
// fs/promises costs a process ~10 ms to load, so its guard is installed when a tool first
// reaches it: through `fs.promises`, `process.getBuiltinModule` or an import (host.mjs passes
// ``prepareBuiltin`` to the module guard).
import { deniedError } from './module_guard.mjs';
import { guardCallbackRemoval, guardCopySync, guardPromiseRemoval } from './fs_gaps.mjs';
import { guardCopyFile } from './file_copies.mjs';
import {
  guardCreation, guardModeCall, guardOwnerCall, handleRefusal,
} from './file_modes.mjs';
import {
  MapCtor, WeakSetCtor, apply, builtin, construct, defineProperty, getOwnPropertyDescriptor,
  getPrototypeOf, isProxy, keys, mapDelete, mapGet, mapHas, mapSet, nextTick, ownKeys, rejected,
  settle, stringCharCodeAt, stringEndsWith, stringSlice, stringStartsWith, symbolDescription,
  weakSetAdd, weakSetHas,
} from './pristine.mjs';

const fs = builtin('node:fs');
const { syncBuiltinESMExports } = builtin('node:module');
// Descriptors the tool may use: the permanent ones (never closed by the tool) and its own.
const permanent = new MapCtor();
const opened = new MapCtor();
// FileHandles that fs/promises' `open` returned, and the prototype they share (known from
// the first one: no handle, no prototype).
const handles = new WeakSetCtor();
let handleProto = null;
let promisesGuarded = false;

// Asynchronous operations queued on each of the tool's descriptors, and the closes waiting for
// them: a close of a descriptor with an operation in flight is made when the last one ends, so
// its number is never free (and Node's to reuse for a pipe of its own) while an operation
// queued under it has yet to run.
const inFlight = new MapCtor();
const waitingCloses = new MapCtor();

function usable(fd) {
  return apply(mapHas, permanent, [fd]) || apply(mapHas, opened, [fd]);
}

function descriptorError(fd) {
  return deniedError(`file descriptor ${fd} (not opened by the tool)`);
}

/** The refusal of ``fd``, as Node reports its own: thrown by a synchronous function, passed
 * to the callback (on the next tick) of an asynchronous one. */
function refuse(fd, name, args) {
  const err = descriptorError(fd);
  const callback = args[args.length - 1];
  if (typeof callback !== 'function' || apply(stringEndsWith, name, ['Sync'])) throw err;
  apply(nextTick, process, [callback, err]);
}

/** Count an asynchronous operation on the tool's ``fd``: every function among ``args`` is
 * wrapped to end it, since Node does not always call the last one (`fs.read(fd, buffer, 0,
 * 6, 0, callback, 'x')` calls the sixth: taken from the last, such a read went uncounted and
 * a closeSync freed its number while it was queued). Returns a function that ends it now
 * (the call threw). */
function track(fd, args) {
  const count = apply(mapGet, inFlight, [fd]);
  apply(mapSet, inFlight, [fd, count === undefined ? 1 : count + 1]);
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    endOperation(fd);
  };
  for (let i = 1; i < args.length; i += 1) {
    const callback = args[i];
    if (typeof callback !== 'function') continue;
    args[i] = function operationDone(...results) {
      end();
      return apply(callback, this, results);
    };
  }
  return end;
}

/** Whether ``args`` hold a function after the descriptor (a callback Node may call). */
function anyFunction(args) {
  for (let i = 1; i < args.length; i += 1) if (typeof args[i] === 'function') return true;
  return false;
}

/** One operation on ``fd`` ended: the last one makes a waiting close. */
function endOperation(fd) {
  const count = apply(mapGet, inFlight, [fd]) - 1;
  if (count > 0) {
    apply(mapSet, inFlight, [fd, count]);
    return;
  }
  apply(mapDelete, inFlight, [fd]);
  const close = apply(mapGet, waitingCloses, [fd]);
  if (close === undefined) return;
  apply(mapDelete, waitingCloses, [fd]);
  try {
    apply(close.fn, fs, close.args);
  } catch {
    // closeSync's own error (the descriptor is gone): nobody is waiting for it.
  }
}

/** Call ``fs[name]`` (``fn``) with ``args``, counting it when it is an asynchronous operation
 * on a descriptor the tool opened. */
function callCounted(fn, name, self, args) {
  const fd = args[0];
  const counted = typeof fd === 'number' && apply(mapHas, opened, [fd])
    && !apply(stringEndsWith, name, ['Sync']) && anyFunction(args);
  if (!counted) return apply(fn, self, args);
  const end = track(fd, args);
  try {
    return apply(fn, self, args);
  } catch (err) {
    end();
    throw err;
  }
}

/** ``fs[name]`` refusing a first argument that is a number the tool may not use. */
function checkingFirst(fn, name) {
  const code = apply(stringCharCodeAt, name, [0]);
  if (!(code >= 65 && code <= 90)) {
    // A method: no `prototype` to make (a process wraps ~100 of them at start-up).
    return {
      guarded(...args) {
        if (typeof args[0] === 'number' && !usable(args[0])) return refuse(args[0], name, args);
        return callCounted(fn, name, this, args);
      },
    }.guarded;
  }
  // A class (fs.Stats, fs.Dirent) keeps its prototype: `instanceof` answers as before.
  const guarded = function guarded(...args) {
    if (typeof args[0] === 'number' && !usable(args[0])) return refuse(args[0], name, args);
    return new.target ? construct(fn, args, new.target) : apply(fn, this, args);
  };
  defineProperty(guarded, 'prototype', { __proto__: null, value: fn.prototype });
  return guarded;
}

/** ``guarded`` with the symbol-keyed properties of ``fn``: util.promisify's markers
 * (`fs.read` resolves to `{ bytesRead, buffer }`, `fs.exists` to a boolean), a function
 * among them guarded as well. */
function withMarkers(guarded, fn, name) {
  const own = ownKeys(fn);
  for (let i = 0; i < own.length; i += 1) {
    if (typeof own[i] !== 'symbol') continue;
    const d = getOwnPropertyDescriptor(fn, own[i]);
    const value = typeof d.value === 'function' ? checkingFirst(d.value, name) : d.value;
    defineProperty(guarded, own[i], { __proto__: null, ...d, value });
  }
  return guarded;
}

function replace(target, name, value) {
  const d = getOwnPropertyDescriptor(target, name);
  defineProperty(target, name, {
    __proto__: null, value, writable: d.writable, enumerable: d.enumerable, configurable: true,
  });
}

function record(fd) {
  if (typeof fd === 'number') apply(mapSet, opened, [fd, true]);
}

/** ``close``/``closeSync``: only the tool's own descriptors, forgotten before they close
 * (the number may be Node's again the moment it is free), and closed only once no operation
 * on them is in flight (``endOperation`` closes them then). */
function closing(fn, name) {
  return function close(...args) {
    const fd = args[0];
    if (typeof fd === 'number') {
      if (!apply(mapHas, opened, [fd])) return refuse(fd, name, args);
      apply(mapDelete, opened, [fd]);
      if (apply(mapHas, inFlight, [fd])) {
        apply(mapSet, waitingCloses, [fd, { __proto__: null, fn, args }]);
        return undefined;
      }
    }
    return apply(fn, this, args);
  };
}

/** ``fs.cp``/``fs.cpSync`` with fs/promises guarded first. Node's copies (cp.js, which
 * cpSync loads too) take fs/promises' `chmod` and `copyFile` once, when they first load: a
 * copy made before the tool reached fs/promises carried a source directory's 0777 through
 * Node's own `chmod`, for that copy and every later one. */
function promisesFirst(fn) {
  return function copy(...args) {
    if (!promisesGuarded) guardedPromises();
    return apply(fn, this, args);
  };
}

function wrapFs(channelFds) {
  const fixed = [0, 1, 2, channelFds[0], channelFds[1]];
  for (let i = 0; i < fixed.length; i += 1) apply(mapSet, permanent, [fixed[i], true]);
  const names = keys(fs);
  const originals = { __proto__: null };
  for (let i = 0; i < names.length; i += 1) {
    const d = getOwnPropertyDescriptor(fs, names[i]);
    // Accessors are the lazily loaded classes and `promises` (below); the realpath variants
    // harden.mjs locked take paths only. Assigned, not defined: no tool code has run yet,
    // and a process wraps ~100 of them at start-up.
    if (d === undefined || !d.writable || !d.configurable || typeof d.value !== 'function') {
      continue;
    }
    originals[names[i]] = d.value;
    fs[names[i]] = withMarkers(checkingFirst(d.value, names[i]), d.value, names[i]);
  }
  const openSync = originals.openSync;
  fs.openSync = function openSync_(...args) {
    const fd = apply(openSync, fs, args);
    record(fd);
    return fd;
  };
  const open = originals.open;
  fs.open = function open_(...args) {
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = function opened_(err, fd) {
        if (!err) record(fd);
        return apply(callback, this, [err, fd]);
      };
    }
    return apply(open, fs, args);
  };
  // Gaps in Node's own checks (fs_gaps.mjs).
  fs.cp = promisesFirst(fs.cp);
  fs.cpSync = promisesFirst(guardCopySync(fs.cpSync));
  fs.rm = guardCallbackRemoval(fs.rm);
  fs.rmdir = guardCallbackRemoval(fs.rmdir);
  // Modes and owners that open a file to other users (file_modes.mjs).
  const modeCalls = ['chmod', 'fchmod', 'lchmod', 'chown', 'fchown', 'lchown'];
  for (let i = 0; i < modeCalls.length; i += 1) {
    const name = modeCalls[i];
    const guard = i < 3 ? guardModeCall : guardOwnerCall;
    if (typeof fs[name] === 'function') fs[name] = guard(fs[name], 'callback');
    if (typeof fs[`${name}Sync`] === 'function') {
      fs[`${name}Sync`] = guard(fs[`${name}Sync`], 'sync');
    }
  }
  // New files with a set-ID bit (file_modes.mjs): writeFile, appendFile and write streams
  // open with fs.open, appendFileSync calls writeFileSync.
  fs.open = guardCreation(fs.open, 2, false, 'callback');
  fs.openSync = guardCreation(fs.openSync, 2, false, 'sync');
  fs.writeFileSync = guardCreation(fs.writeFileSync, 2, true, 'sync');
  // Copies with the source's mode and owner (file_copies.mjs).
  fs.copyFile = guardCopyFile(fs.copyFile, 'callback');
  fs.copyFileSync = guardCopyFile(fs.copyFileSync, 'sync');
  fs.close = closing(originals.close, 'close');
  fs.closeSync = closing(originals.closeSync, 'closeSync');
  const promises = getOwnPropertyDescriptor(fs, 'promises');
  defineProperty(fs, 'promises', {
    __proto__: null,
    get() { return guardedPromises(); },
    set: promises.set,
    enumerable: promises.enumerable,
    configurable: true,
  });
}

/** Whether ``value`` is, or inherits from, a FileHandle without being one `open` returned.
 * A proxy anywhere on the way counts as one: its prototype could change between this check
 * and Node's `instanceof`. */
function isForgedHandle(value) {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  if (apply(weakSetHas, handles, [value])) return false;
  if (handleProto === null) return false; // no handle yet: nothing inherits from one
  for (let v = value; v !== null; v = getPrototypeOf(v)) {
    if (isProxy(v)) return true;
    if (v === handleProto) return true;
  }
  return false;
}

function forgedHandleError() {
  return deniedError('a file handle that fs/promises open did not return');
}

/** The own symbol-keyed property of ``handle`` named ``description`` (Node's `kFd`,
 * `kHandle`), or a refusal: a Node that keeps it elsewhere needs this guard reviewed. */
function ownSymbol(handle, description, what) {
  const own = ownKeys(handle);
  for (let i = 0; i < own.length; i += 1) {
    if (typeof own[i] === 'symbol' && apply(symbolDescription, own[i], []) === description) {
      return own[i];
    }
  }
  throw deniedError(`file handles (their ${what} property is unknown)`);
}

/** ``handle``'s `kFd` and `fd` as fixed accessors over the descriptor it opened: the tool
 * reads them, and only Node's close may set `kFd`, to -1. */
function fixDescriptor(handle) {
  const key = ownSymbol(handle, 'kFd', 'descriptor');
  let fd = getOwnPropertyDescriptor(handle, key).value;
  const get = function fd_() { return fd; };
  defineProperty(handle, key, {
    __proto__: null,
    get,
    set(value) {
      if (value !== -1) throw descriptorError(value);
      fd = -1;
    },
    enumerable: false,
    configurable: false,
  });
  defineProperty(handle, 'fd', {
    __proto__: null, get, set: undefined, enumerable: false, configurable: false,
  });
}

/** In place of every `constructor` on the prototype chain of a FileHandle's C++ object. */
function denied() {
  throw deniedError("a native handle's class");
}

/** Each `constructor` on the prototype chain of ``handle``'s C++ object, below
 * Object.prototype, becomes a refusing function, fixed in place. */
function lockNativeConstructors(handle) {
  const native = getOwnPropertyDescriptor(handle, ownSymbol(handle, 'kHandle', 'native handle'));
  for (let p = getPrototypeOf(native.value); p !== null; p = getPrototypeOf(p)) {
    if (getPrototypeOf(p) === null) break; // Object.prototype: its constructor is Object
    if (getOwnPropertyDescriptor(p, 'constructor') === undefined) continue;
    defineProperty(p, 'constructor', {
      __proto__: null, value: denied, writable: false, enumerable: false, configurable: false,
    });
    if (getOwnPropertyDescriptor(p, 'constructor').value !== denied) {
      throw deniedError('file handles (their native class could not be locked)');
    }
  }
}

function guardHandleProto(proto) {
  handleProto = proto;
  const names = ownKeys(proto);
  for (let i = 0; i < names.length; i += 1) {
    const d = getOwnPropertyDescriptor(proto, names[i]);
    if (names[i] === 'constructor' || typeof d.value !== 'function') continue;
    const fn = d.value;
    const name = names[i];
    replace(proto, name, function handleMethod(...args) {
      if (!apply(weakSetHas, handles, [this])) return rejected(forgedHandleError());
      const err = handleRefusal(name, args);
      if (err !== null) return rejected(err);
      return apply(fn, this, args);
    });
  }
}

/** fs/promises with its functions guarded (installed once, on first use). */
function guardedPromises() {
  const promises = builtin('node:fs/promises');
  if (promisesGuarded) return promises;
  promisesGuarded = true;
  const names = keys(promises);
  for (let i = 0; i < names.length; i += 1) {
    const d = getOwnPropertyDescriptor(promises, names[i]);
    if (d === undefined || typeof d.value !== 'function') continue;
    const fn = d.value;
    replace(promises, names[i], function promisesFunction(...args) {
      if (typeof args[0] === 'number' && !usable(args[0])) {
        return rejected(descriptorError(args[0]));
      }
      for (let j = 0; j < args.length; j += 1) {
        if (isForgedHandle(args[j])) return rejected(forgedHandleError());
      }
      return apply(fn, this, args);
    });
  }
  // The handle as Node's open resolves it (settled: `await` reads no `then` a tool replaced).
  const open = getOwnPropertyDescriptor(promises, 'open').value;
  replace(promises, 'open', async function open_(...args) {
    const handle = await settle(apply(open, promises, args));
    try {
      fixDescriptor(handle);
    } catch (err) {
      await handle.close();
      throw err;
    }
    if (handleProto === null) {
      try {
        lockNativeConstructors(handle);
      } catch (err) {
        await handle.close();
        throw err;
      }
      guardHandleProto(getPrototypeOf(handle));
    }
    apply(weakSetAdd, handles, [handle]);
    return handle;
  });
  replace(promises, 'rm', guardPromiseRemoval(promises.rm));
  replace(promises, 'chmod', guardModeCall(promises.chmod, 'promise'));
  if (typeof promises.lchmod === 'function') {
    replace(promises, 'lchmod', guardModeCall(promises.lchmod, 'promise'));
  }
  replace(promises, 'chown', guardOwnerCall(promises.chown, 'promise'));
  replace(promises, 'lchown', guardOwnerCall(promises.lchown, 'promise'));
  replace(promises, 'rmdir', guardPromiseRemoval(promises.rmdir));
  // fs/promises' writeFile and appendFile open with its own open, not the module's.
  replace(promises, 'open', guardCreation(promises.open, 2, false, 'promise'));
  replace(promises, 'writeFile', guardCreation(promises.writeFile, 2, true, 'promise'));
  replace(promises, 'appendFile', guardCreation(promises.appendFile, 2, true, 'promise'));
  replace(promises, 'copyFile', guardCopyFile(promises.copyFile, 'promise'));
  // `import { open } from 'node:fs/promises'` links against the guarded functions.
  syncBuiltinESMExports();
  return promises;
}

/** Called by the module guard and process.getBuiltinModule before a built-in is handed out. */
export function prepareBuiltin(id) {
  const bare = apply(stringStartsWith, id, ['node:']) ? apply(stringSlice, id, [5]) : id;
  if (bare === 'fs/promises') guardedPromises();
}

/** Install the guard on node:fs; ``channelFds`` are the job channel's pipes. */
export function installFdGuard(channelFds) {
  wrapFs(channelFds);
}
