// The module guard: which modules a tool may load, enforced by synchronous module hooks
// (module.registerHooks) for import, dynamic import() and require, and by the
// process.getBuiltinModule wrapper installed in harden.mjs.
import { registerHooks } from 'node:module';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sep } from 'node:path';
import { ACCESS_DENIED } from './codes.mjs';
import { apply, arrayIncludes, freeze, stringSlice, stringStartsWith } from './pristine.mjs';

// Built-ins a tool may never load, with or without the `node:` prefix. Sockets and DNS
// (the guarded fetch is the only network API), process/thread creation, code evaluation
// (vm, repl), engine and loader control (v8, module, inspector, trace_events), storage outside
// the permission model (sqlite), and APIs that hand out live handles or sockets
// (async_hooks resources, diagnostics_channel messages, tty streams).
export const DENIED_MODULES = freeze([
  'net', 'http', 'https', 'http2', 'tls', 'dgram', 'dns', 'dns/promises', 'inspector',
  'inspector/promises', 'module', 'sqlite', 'vm', 'worker_threads', 'child_process', 'cluster',
  'wasi', 'v8', 'trace_events', 'repl', 'async_hooks', 'diagnostics_channel', 'tty',
  '_http_agent', '_http_client', '_http_common', '_http_incoming', '_http_outgoing',
  '_http_server', '_tls_common', '_tls_wrap', 'test', 'test/reporters', 'quic', 'sea',
]);

// Module formats a tool may use: ES modules (JavaScript or TypeScript), JSON, allowed
// built-ins. CommonJS is refused because its `module.constructor` is node:module itself.
const ALLOWED_FORMATS = freeze(['module', 'module-typescript', 'json', 'builtin']);

export function deniedError(what) {
  const err = new Error(`Access to ${what} is denied in the Splice sandbox`);
  err.code = ACCESS_DENIED;
  return err;
}

export function loadError(message) {
  const err = new Error(message);
  err.code = 'ERR_SPLICE_MODULE_REFUSED';
  return err;
}

/** True when a built-in specifier (`fs`, `node:net`, `dns/promises`) is on the denied list. */
export function isDeniedBuiltin(specifier) {
  const s = String(specifier);
  const bare = apply(stringStartsWith, s, ['node:']) ? apply(stringSlice, s, [5]) : s;
  return apply(arrayIncludes, DENIED_MODULES, [bare]);
}

/** Install the hooks; afterwards only files under ``packageDir`` and allowed built-ins load. */
export function installModuleGuard(packageDir) {
  const root = realpathSync(packageDir);
  const prefix = root.endsWith(sep) ? root : root + sep;

  const checkUrl = (url) => {
    if (apply(stringStartsWith, url, ['node:'])) {
      if (isDeniedBuiltin(url)) throw deniedError(`module "${url}"`);
      return;
    }
    if (!apply(stringStartsWith, url, ['file:'])) {
      throw deniedError(`module URL scheme of "${apply(stringSlice, url, [0, 64])}"`);
    }
    let path;
    try {
      path = realpathSync(fileURLToPath(url));
    } catch {
      path = fileURLToPath(url);
    }
    if (!apply(stringStartsWith, path, [prefix])) {
      throw deniedError('a module outside the package');
    }
  };

  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (isDeniedBuiltin(specifier)) throw deniedError(`module "${specifier}"`);
      const result = nextResolve(specifier, context);
      checkUrl(String(result.url));
      return result;
    },
    load(url, context, nextLoad) {
      checkUrl(String(url));
      const result = nextLoad(url, context);
      if (!apply(arrayIncludes, ALLOWED_FORMATS, [result.format])) {
        throw loadError(
          result.format === 'commonjs' || result.format === 'commonjs-typescript'
            ? 'CommonJS modules are not supported in the sandbox; use ES module syntax'
            : `Module format "${result.format}" is not supported in the sandbox`,
        );
      }
      return result;
    },
  });
}
