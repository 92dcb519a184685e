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
//
// Node's loader runs in the tool's realm and looks up, when it runs, functions a tool can
// replace: URL getters, fs.readFileSync, TextDecoder's decode, properties it reads through
// Object.prototype (a `source` there becomes a module's source), and the JavaScript of its
// TypeScript stripper. So the guard takes nothing from it on trust: it computes a URL's path
// and real path itself, with functions captured before any tool code ran, reads the module's
// bytes itself from that real path and gives them to Node (which then reads no file), takes
// from Node only the module's format, and strips TypeScript types itself, accepting the
// result only when it is the file's text with characters blanked. harden.mjs also freezes
// the URL classes, so what Node resolves is what a module's URL says.
import { ACCESS_DENIED } from './codes.mjs';
import {
  apply, arrayIncludes, builtin, decodeUriComponent, ErrorCtor, freeze, isArray, safeGet,
  safeString, setOwn, stringIndexOf, stringSlice, stringStartsWith, StringCtor, URLCtor,
  urlCanParse, urlHostname, urlHref, urlPathname, urlProtocol,
} from './pristine.mjs';

const { isBuiltin, registerHooks, stripTypeScriptTypes } = builtin('node:module');
const { readFileSync } = builtin('node:fs');
const realpathNative = builtin('node:fs').realpathSync.native;
const { sep } = builtin('node:path');

// Module formats Node may report, by scheme: ES modules (JavaScript or TypeScript) and JSON
// for files, and built-ins. CommonJS is refused because its `module.constructor` is
// node:module itself.
const FILE_FORMATS = freeze(['module', 'module-typescript', 'json']);
const NODE_MODULES_SEGMENT = `${sep}node_modules${sep}`;
// Null-prototype options: readFileSync reads `encoding`, `flag`, `buffer` and `signal`.
const READ_TEXT = freeze({ __proto__: null, encoding: 'utf8', flag: 'r' });
const STRIP_TYPES = freeze({ __proto__: null, mode: 'strip' });

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

function formatError(format) {
  return loadError(
    format === 'commonjs' || format === 'commonjs-typescript'
      ? 'CommonJS modules are not supported in the sandbox; use ES module syntax'
      : `Module format "${safeString(format)}" is not supported in the sandbox`,
  );
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

/**
 * The path a `file:` URL names, or undefined when it names none (another scheme, a host, an
 * encoded `/`, a malformed escape): Node's fileURLToPath for POSIX paths, from the URL
 * getters captured in pristine.mjs.
 */
function filePathOf(href) {
  let url;
  try {
    url = new URLCtor(href);
  } catch {
    return undefined;
  }
  if (apply(urlProtocol, url, []) !== 'file:' || apply(urlHostname, url, []) !== '') {
    return undefined;
  }
  const pathname = apply(urlPathname, url, []);
  // Refused by Node's fileURLToPath too ("must not include encoded / characters").
  const encodedSlash = apply(stringIndexOf, pathname, ['%2f']) >= 0
    || apply(stringIndexOf, pathname, ['%2F']) >= 0;
  if (encodedSlash) return undefined;
  try {
    return apply(decodeUriComponent, undefined, [pathname]);
  } catch {
    return undefined;
  }
}

// What Node's type stripping (amaro) puts in place of what it removes, so that positions stay
// the same in UTF-8 and UTF-16: a space for a one-byte character, U+00A0 for a two-byte one,
// U+2002 for a three-byte one, a space and U+FEFF for a four-byte one (two UTF-16 units); and
// `;` where removing a type would join two statements. Measured with Node 24.19, and checked
// by tests/runtime/test_module_guard.py on a module with such characters in its types.
const BLANKS = freeze([' ', '\u00a0', '\u2002', '\ufeff', ';']);

/**
 * The JavaScript of the TypeScript module ``source``, as Node's loader would make it (types
 * stripped, then a `sourceURL` comment). Node's stripper runs JavaScript that reads what a
 * tool can replace, so its result is accepted only when it is ``source`` with some
 * characters blanked (BLANKS): nothing but the file's own text can come out.
 */
function stripTypes(source, url) {
  const code = apply(stripTypeScriptTypes, undefined, [source, STRIP_TYPES]);
  let same = typeof code === 'string' && code.length === source.length;
  for (let i = 0; same && i < source.length; i += 1) {
    same = code[i] === source[i] || apply(arrayIncludes, BLANKS, [code[i]]);
  }
  if (!same) throw loadError('TypeScript type stripping gave code that is not the module\'s text');
  return `${code}\n\n//# sourceURL=${url}`;
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
 * node_modules) and the ``allowed`` built-ins load, each after ``prepare(specifier)`` (which
 * guards a built-in before its first use, fd_guard.mjs). Throws (the host then fails closed)
 * when ``allowed`` is not an array of strings.
 */
export function installModuleGuard(packageDir, allowed, prepare) {
  if (!isArray(allowed)) throw new Error('the job has no built-in allow-list');
  const list = [];
  for (let i = 0; i < allowed.length; i += 1) {
    if (typeof allowed[i] !== 'string') throw new Error('the built-in allow-list is malformed');
    list[i] = allowed[i];
  }
  allowedBuiltins = freeze(list);
  const root = apply(realpathNative, undefined, [packageDir]);
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

  /** Refuses ``url`` unless it is an allowed built-in (undefined) or a file inside the
   * package, outside any node_modules (its real path). */
  const checkUrl = (url, specifier) => {
    if (apply(stringStartsWith, url, ['node:'])) {
      if (!isAllowedBuiltin(url)) throw deniedError(`module "${url}"`);
      return undefined;
    }
    if (!apply(stringStartsWith, url, ['file:'])) {
      throw deniedError(`module URL scheme of "${apply(stringSlice, url, [0, 64])}"`);
    }
    const path = filePathOf(url);
    if (path === undefined) throw deniedError('a module outside the package');
    let real;
    try {
      // The native form: Node's JavaScript realpathSync looks up path.resolve at run time.
      real = apply(realpathNative, undefined, [path]);
    } catch (err) {
      // Outside by name (the permission model refuses its real path): the same refusal.
      checkPath(path, specifier);
      throw err;
    }
    checkPath(real, specifier);
    return real;
  };

  registerHooks({
    resolve(specifier, context, nextResolve) {
      // Captured String: a tool may have replaced the global before it imports.
      const s = apply(StringCtor, undefined, [specifier]);
      if (apply(stringStartsWith, s, ['node:']) || isBuiltin(s)) {
        if (!isAllowedBuiltin(s)) throw deniedError(`module "${s}"`);
        prepare(s);
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
          const path = filePathOf(target);
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
      const real = checkUrl(u, u);
      if (real === undefined) {
        const result = nextLoad(u, context);
        if (result.format !== 'builtin') throw formatError(result.format);
        return result;
      }
      // The file's text, read here from the path just checked; an own `source` in the
      // context is what Node's default load takes instead of reading the file (with the
      // `source` of Object.prototype when there is none).
      let source = apply(readFileSync, undefined, [real, READ_TEXT]);
      // Without a leading BOM, as Node's decoder gives it.
      if (source[0] === '\ufeff') source = apply(stringSlice, source, [1]);
      setOwn(context, 'source', source);
      const { format } = nextLoad(u, context);
      if (!apply(arrayIncludes, FILE_FORMATS, [format])) throw formatError(format);
      if (format === 'module-typescript') {
        return { __proto__: null, format: 'module', source: stripTypes(source, u) };
      }
      // A string: Node decodes bytes with the tool's TextDecoder.prototype.decode.
      return { __proto__: null, format, source };
    },
  });
}
