// Locks down the tool's process before its module is imported: environment, process methods
// that reach other processes or native code, live stdio handles, the fs.realpath variants,
// the globals that open sockets, and process.getBuiltinModule (module_guard.mjs holds the
// built-in allow-list).
import fs from 'node:fs';
import { Writable, Readable } from 'node:stream';
import { Console } from 'node:console';
import { syncBuiltinESMExports } from 'node:module';
import { deniedError, isAllowedBuiltin } from './module_guard.mjs';
import {
  apply, defineProperty, getOwnPropertyDescriptor, keys, safeString, writeSync,
} from './pristine.mjs';

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

function lock(target, name, value) {
  // Delete first: reading or redefining Node's lazy globals (WebSocket, fetch) would load
  // undici (~35 ms) just to throw it away.
  if (name in target) delete target[name];
  defineProperty(target, name, { value, writable: false, configurable: false, enumerable: false });
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

/** stdout/stderr as plain fd writers (the pipe-backed defaults are net.Socket instances). */
export function installStdio() {
  const writer = (fd) => {
    const stream = new Writable({
      write(chunk, encoding, callback) {
        try {
          apply(writeSync, undefined, [fd, chunk]);
          callback();
        } catch (err) {
          callback(err);
        }
      },
    });
    stream.fd = fd;
    stream.isTTY = false;
    return stream;
  };
  const out = writer(1);
  const err = writer(2);
  const stdin = new Readable({ read() { this.push(null); } });
  lock(process, 'stdout', out);
  lock(process, 'stderr', err);
  lock(process, 'stdin', stdin);
  // console.* goes to stderr so it can never be confused with a result (docs/compatibility.md#tool-module-contract).
  const logger = new Console({ stdout: err, stderr: err, colorMode: false });
  lock(globalThis, 'console', logger);
  return logger;
}

function installProcessDenials() {
  for (const name of DENIED_PROCESS_MEMBERS) {
    lock(process, name, deniedFunction(`process.${name}`));
  }
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
  lock(fs, 'realpathSync', realpathSync);
  lock(fs, 'realpath', realpath);
}

function installBuiltinGuard() {
  const original = process.getBuiltinModule;
  const guarded = function getBuiltinModule(id) {
    // The same primitive is checked and passed on (a non-string is refused: its toString
    // could answer differently the second time).
    if (!isAllowedBuiltin(id)) throw deniedError(`module "${safeString(id)}"`);
    return apply(original, process, [id]);
  };
  lock(process, 'getBuiltinModule', guarded);
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
export function harden({ guardedFetch }) {
  const logger = installStdio();
  installProcessDenials();
  installRealpathGuard();
  installBuiltinGuard();
  installNetworkGlobals(guardedFetch);
  // The named exports of node:fs and node:process (`import { realpathSync } from 'node:fs'`)
  // are snapshots: bring them up to date with every lock above.
  syncBuiltinESMExports();
  return logger;
}
