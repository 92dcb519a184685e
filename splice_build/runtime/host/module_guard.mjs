// The module guard: which modules a tool may load, enforced by synchronous module hooks
// (module.registerHooks) for import, dynamic import() and require, and by the
// process.getBuiltinModule wrapper installed in harden.mjs.
//
// Built-ins by allow-list: the job carries the list (splice_build/schemas/builtins.json);
// every other built-in — every `_`-prefixed one and any a later Node adds — is refused with
// ERR_ACCESS_DENIED, with or without the `node:` prefix. Files load only from inside the
// package and never from a `node_modules` in it, and bare specifiers that are not built-ins
// are refused before resolution: a package behaves the same in its directory as after
// packing (which drops node_modules), docs/security.md#built-in-modules.
import { ACCESS_DENIED } from './codes.mjs';
import {
  apply, arrayIncludes, builtin, ErrorCtor, freeze, isArray, safeGet, setOwn, stringIndexOf,
  stringSlice, stringStartsWith, StringCtor, URLCtor, urlCanParse, urlHref,
} from './pristine.mjs';

const { isBuiltin, registerHooks } = builtin('node:module');
const { realpathSync } = builtin('node:fs');
const { fileURLToPath } = builtin('node:url');
const { sep } = builtin('node:path');

// Module formats a tool may use: ES modules (JavaScript or TypeScript), JSON, allowed
// built-ins. CommonJS is refused because its `module.constructor` is node:module itself.
const ALLOWED_FORMATS = freeze(['module', 'module-typescript', 'json', 'builtin']);
const NODE_MODULES_SEGMENT = `${sep}node_modules${sep}`;

// Empty until installModuleGuard: nothing is allowed before the job's list is installed.
let allowedBuiltins = freeze([]);

export function deniedError(what) {
  const err = new ErrorCtor(`Access to ${what} is denied in the Splice sandbox`);
  setOwn(err, 'code', ACCESS_DENIED);
  return err;
}

export function loadError(message) {
  const err = new ErrorCtor(message);
  setOwn(err, 'code', 'ERR_SPLICE_MODULE_REFUSED');
  return err;
}

function dependencyError(specifier) {
  return loadError(
    `Cannot import "${apply(stringSlice, specifier, [0, 64])}": tools cannot use npm ` +
      'dependencies (node_modules is not part of a package); bundle the code into the package',
  );
}

/**
 * True only when ``specifier`` is a string naming an allowed built-in (`fs`, `node:fs`).
 * Anything else — another built-in, a non-string, `node:fs?x` — is false: fail closed.
 */
export function isAllowedBuiltin(specifier) {
  if (typeof specifier !== 'string') return false;
  const bare = apply(stringStartsWith, specifier, ['node:'])
    ? apply(stringSlice, specifier, [5])
    : specifier;
  return apply(arrayIncludes, allowedBuiltins, [bare]);
}

/** Node's "Cannot find package" (a bare name it looked up in node_modules), not a missing file. */
function isMissingPackage(err) {
  const message = safeGet(err, 'message');
  return (
    safeGet(err, 'code') === 'ERR_MODULE_NOT_FOUND' &&
    typeof message === 'string' &&
    apply(stringStartsWith, message, ['Cannot find package '])
  );
}

/** A specifier Node would look up in node_modules: not relative, absolute, `#` or a URL. */
function isBare(specifier) {
  if (specifier === '.' || specifier === '..') return false;
  if (apply(stringStartsWith, specifier, ['./']) || apply(stringStartsWith, specifier, ['../'])) {
    return false;
  }
  if (apply(stringStartsWith, specifier, ['/']) || apply(stringStartsWith, specifier, ['#'])) {
    return false;
  }
  return !apply(urlCanParse, URLCtor, [specifier]);
}

/**
 * Install the hooks and the list; afterwards only files under ``packageDir`` (outside any
 * node_modules) and the ``allowed`` built-ins load. Throws (the host then fails closed) when
 * ``allowed`` is not an array of strings.
 */
export function installModuleGuard(packageDir, allowed) {
  if (!isArray(allowed)) throw new Error('the job has no built-in allow-list');
  const list = [];
  for (let i = 0; i < allowed.length; i += 1) {
    if (typeof allowed[i] !== 'string') throw new Error('the built-in allow-list is malformed');
    list[i] = allowed[i];
  }
  allowedBuiltins = freeze(list);
  const root = realpathSync(packageDir);
  const prefix = root.endsWith(sep) ? root : root + sep;
  // A `node_modules` segment below the package root (the file itself may be named so).
  const inNodeModules = (path) =>
    apply(stringIndexOf, `${apply(stringSlice, path, [prefix.length - 1])}${sep}`, [
      NODE_MODULES_SEGMENT,
    ]) >= 0;

  const checkPath = (path, specifier) => {
    if (!apply(stringStartsWith, path, [prefix])) throw deniedError('a module outside the package');
    if (inNodeModules(path)) throw dependencyError(specifier);
  };

  const checkUrl = (url, specifier) => {
    if (apply(stringStartsWith, url, ['node:'])) {
      if (!isAllowedBuiltin(url)) throw deniedError(`module "${url}"`);
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
    checkPath(path, specifier);
  };

  registerHooks({
    resolve(specifier, context, nextResolve) {
      // Captured String: a tool may have replaced the global before it imports.
      const s = apply(StringCtor, undefined, [specifier]);
      if (apply(stringStartsWith, s, ['node:']) || isBuiltin(s)) {
        if (!isAllowedBuiltin(s)) throw deniedError(`module "${s}"`);
      } else if (isBare(s)) {
        throw dependencyError(s);
      } else if (context.parentURL !== undefined && !apply(stringStartsWith, s, ['#'])) {
        // Decided on the name alone, before any file is looked at: the same refusal whether
        // the file exists (a package directory) or not (the same package after packing).
        let target;
        try {
          target = apply(urlHref, new URLCtor(s, context.parentURL), []);
        } catch {
          target = undefined;
        }
        if (target !== undefined && apply(stringStartsWith, target, ['file:'])) {
          let path;
          try {
            path = fileURLToPath(target);
          } catch {
            path = undefined;
          }
          // Outside the package by name: refused before Node looks (the file view may hide
          // the file, which must not turn the refusal into "not found").
          if (path !== undefined && !apply(stringStartsWith, path, [prefix])) {
            throw deniedError('a module outside the package');
          }
          if (path !== undefined && inNodeModules(path)) throw dependencyError(s);
        }
      }
      let result;
      try {
        result = nextResolve(specifier, context);
      } catch (err) {
        // A package.json `imports` entry (`#dep`) that maps to a package: in a directory it
        // resolves into node_modules (refused below), after packing Node finds no package.
        // Both are the same refusal.
        if (apply(stringStartsWith, s, ['#']) && isMissingPackage(err)) throw dependencyError(s);
        throw err;
      }
      checkUrl(apply(StringCtor, undefined, [result.url]), s);
      return result;
    },
    load(url, context, nextLoad) {
      const u = apply(StringCtor, undefined, [url]);
      checkUrl(u, u);
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
