// Locks down the tool's process before its module is imported: environment, process methods
// that reach other processes or native code, live stdio handles, the fs.realpath variants,
// the file descriptors a tool may name (fd_guard.mjs),
// the globals that open sockets, process.getBuiltinModule (module_guard.mjs holds the
// built-in allow-list) and the URL classes Node's module loader uses.
import { deniedError, isAllowedBuiltin } from './module_guard.mjs';
import { installFdGuard, prepareBuiltin } from './fd_guard.mjs';
import { guardedUmask } from './file_modes.mjs';
import {
  apply, builtin, defineProperty, fatalException, freeze, getOwnPropertyDescriptor,
  getPrototypeOf, keys, ownKeys, safeString, setOwn, setUncaughtExceptionCaptureCallback,
  writeSync,
} from './pristine.mjs';

const fs = builtin('node:fs');
const { syncBuiltinESMExports } = builtin('node:module');

function deniedFunction(what) {
  return function denied() {
    throw deniedError(what);
  };
}

// process members that signal or inspect other processes, load native code, change identity,
// replace the process image, write reports, or hand out live handles.
const DENIED_PROCESS_MEMBERS = Object.freeze([
  'kill', '_kill', '_debugProcess', '_debugEnd', 'dlopen', 'binding', '_linkedBinding',
  'setuid', 'setgid', 'seteuid', 'setegid', 'setgroups', 'initgroups', 'execve',
  '_getActiveHandles', '_getActiveRequests', '_startProfilerIdleNotifier',
  '_stopProfilerIdleNotifier', 'report', 'channel', 'send', 'connected', 'disconnect',
  'openStdin', 'mainModule',
]);

// Globals that open network connections outside the guarded fetch.
const REMOVED_GLOBALS = Object.freeze(['WebSocket', 'EventSource', 'WebSocketStream']);
const UNDICI_DISPATCHER = Symbol.for('undici.globalDispatcher.1');
const DENYING_DISPATCHER = Object.freeze({
  dispatch: deniedFunction('the undici dispatcher'),
  close: deniedFunction('the undici dispatcher'),
  destroy: deniedFunction('the undici dispatcher'),
});

function lock(target, name, value, enumerable = false) {
  // Delete first: reading or redefining Node's lazy globals (WebSocket, fetch) would load
  // undici (~35 ms) just to throw it away.
  if (name in target) delete target[name];
  defineProperty(target, name, { value, writable: false, configurable: false, enumerable });
  const d = getOwnPropertyDescriptor(target, name);
  if (!d || d.value !== value || d.writable || d.configurable) {
    throw new Error(`could not lock ${String(name)}`);
  }
}

/** Replace the environment with exactly the declared variables (PROTOCOL.md: job.env). */
export function installEnvironment(env) {
  for (const name of keys(process.env)) delete process.env[name];
  for (const name of keys(env)) process.env[name] = String(env[name]);
}

/** Like ``lock``, for an accessor: a getter no tool can replace, redefine or shadow. */
function lockGetter(target, name, get) {
  if (name in target) delete target[name];
  defineProperty(target, name, { get, set: undefined, configurable: false, enumerable: false });
  const d = getOwnPropertyDescriptor(target, name);
  if (!d || d.get !== get || d.set !== undefined || d.configurable) {
    throw new Error(`could not lock ${String(name)}`);
  }
}

/** stdout/stderr as plain fd writers (the pipe-backed defaults are net.Socket instances),
 * an ended stdin, and console.* on stderr. Each is made when the tool first reads one of
 * them: most tools never do, and node:stream and node:console cost a process ~4 ms to
 * load (see pristine.mjs). The getters are locked now, before the tool loads. */
export function installStdio() {
  let made = null;
  const make = () => {
    if (made !== null) return made;
    const { Writable, Readable } = builtin('node:stream');
    const { Console } = builtin('node:console');
    const writer = (fd) => {
      const stream = new Writable({
        __proto__: null,
        write(chunk, encoding, callback) {
          try {
            apply(writeSync, undefined, [fd, chunk]);
            callback();
          } catch (err) {
            callback(err);
          }
        },
      });
      // Defined, not assigned: this runs after tool code, which may have put setters on
      // Object.prototype (pristine.mjs's rules).
      setOwn(stream, 'fd', fd);
      setOwn(stream, 'isTTY', false);
      return stream;
    };
    const out = writer(1);
    const err = writer(2);
    made = {
      __proto__: null,
      stdout: out,
      stderr: err,
      stdin: new Readable({ __proto__: null, read() { this.push(null); } }),
      // console.* goes to stderr so it can never be confused with a result (docs/compatibility.md#tool-module-contract).
      console: new Console({ __proto__: null, stdout: err, stderr: err, colorMode: false }),
    };
    return made;
  };
  lockGetter(process, 'stdout', function stdout() { return make().stdout; });
  lockGetter(process, 'stderr', function stderr() { return make().stderr; });
  lockGetter(process, 'stdin', function stdin() { return make().stdin; });
  lockGetter(globalThis, 'console', function console() { return make().console; });
}

/**
 * Send every uncaught exception and unhandled rejection to ``handler``, whatever the tool
 * does to `process` (docs/security.md, "A call's verdict"). Node's C++ side hands each one
 * to `process._fatalException`, which it reads from `process` every time; that function
 * calls the capture callback, when one is set, instead of emitting `uncaughtException`.
 * Both are fixed here, before any tool code: `_fatalException` locked to Node's own, the
 * callback set to the host's and its setter denied. Listeners, `process.emit` and
 * `EventEmitter.prototype` then change nothing. Unhandled rejections reach the same path
 * first because sandbox.py starts Node with `--unhandled-rejections=strict`; without it
 * Node would ask `process.emit('unhandledRejection')` whether one was handled.
 */
export function lockFailureHandler(handler) {
  apply(setUncaughtExceptionCaptureCallback, process, [handler]);
  lock(process, '_fatalException', fatalException, true);
  lock(
    process,
    'setUncaughtExceptionCaptureCallback',
    deniedFunction('process.setUncaughtExceptionCaptureCallback'),
    true,
  );
}

function installProcessDenials() {
  for (const name of DENIED_PROCESS_MEMBERS) {
    lock(process, name, deniedFunction(`process.${name}`));
  }
  // Enumerable, as Node's own (`import { umask } from 'node:process'`).
  lock(process, 'umask', guardedUmask, true);
}

// fs.realpath and fs.realpathSync are Node's JavaScript walks, which lstat each component
// without the permission check: outside the grants they answered whether a path exists.
// Both become their native forms, which check the whole path first and refuse an existing
// and a missing path alike (docs/security.md#file-access); `.native` stays as it was.
function installRealpathGuard() {
  const nativeSync = fs.realpathSync.native;
  const nativeCallback = fs.realpath.native;
  const realpathSync = function realpathSync(...args) {
    return apply(nativeSync, fs, args);
  };
  const realpath = function realpath(...args) {
    return apply(nativeCallback, fs, args);
  };
  lock(realpathSync, 'native', nativeSync);
  lock(realpath, 'native', nativeCallback);
  // Enumerable, as Node's own: the tool's `import { realpathSync } from 'node:fs'` links
  // against the enumerable exports of node:fs, read when the tool first imports it.
  lock(fs, 'realpathSync', realpathSync, true);
  lock(fs, 'realpath', realpath, true);
}

function installBuiltinGuard() {
  const original = process.getBuiltinModule;
  const guarded = function getBuiltinModule(id) {
    // The same primitive is checked and passed on (a non-string is refused: its toString
    // could answer differently the second time).
    if (!isAllowedBuiltin(id)) throw deniedError(`module "${safeString(id)}"`);
    prepareBuiltin(id);
    return apply(original, process, [id]);
  };
  lock(process, 'getBuiltinModule', guarded);
}

// Node's module loader resolves and reads modules with the realm's URL class, whose methods,
// getters and statics it looks up when it runs (fileURLToPath reads `protocol`, `hostname`
// and `pathname`; the resolver `href`, `search`, `hash`…): a tool that redefined one would
// decide which file Node resolves and reads. Frozen, with URLSearchParams (a URL's
// `searchParams`) and its iterator. The module guard does not depend on it (module_guard.mjs
// computes its own paths and reads its own bytes); this keeps Node's answers the true ones.
function freezeUrlClasses() {
  const targets = [
    URL, URL.prototype, URLSearchParams, URLSearchParams.prototype,
    getPrototypeOf(new URLSearchParams().keys()),
  ];
  for (let i = 0; i < targets.length; i += 1) {
    const target = freeze(targets[i]);
    const names = ownKeys(target);
    for (let j = 0; j < names.length; j += 1) {
      const d = getOwnPropertyDescriptor(target, names[j]);
      if (d.configurable || d.writable) throw new Error('could not freeze the URL classes');
    }
  }
}

function installNetworkGlobals(guardedFetch) {
  lock(globalThis, 'fetch', guardedFetch);
  for (const name of REMOVED_GLOBALS) lock(globalThis, name, undefined);
  // A dispatcher that refuses everything, locked in place before undici ever loads: when a
  // tool touches Response/Headers, undici finds a dispatcher already set and installs none of
  // its own, so no Agent that can open connections is ever reachable.
  lock(globalThis, UNDICI_DISPATCHER, DENYING_DISPATCHER);
}

/**
 * Apply every lock; throws if any cannot be applied (the host then exits without running
 * the tool, which the parent reports as TOOL_CRASHED: fail closed).
 */
export function harden({ guardedFetch, channelFds }) {
  installStdio();
  installProcessDenials();
  installRealpathGuard();
  installFdGuard(channelFds);
  installBuiltinGuard();
  freezeUrlClasses();
  installNetworkGlobals(guardedFetch);
  // The named exports of node:fs and node:process (`import { realpathSync } from 'node:fs'`)
  // are snapshots: bring them up to date with every lock above.
  syncBuiltinESMExports();
}
