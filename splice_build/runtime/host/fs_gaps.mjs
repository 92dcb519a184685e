// Where Node's own fs calls step around its permission model (Node 24.19), and the host
// closes the gap before the call reaches Node.
//
// Links. The tool may not make a symbolic link (`fs.symlink` needs every read and write
// permission), since Node follows links without checking where they lead: a link in a write
// grant writes wherever it points. But `fs.cpSync` without a `filter` copies a directory in
// C++ (`cpSyncCopyDir`), which makes every link it finds there without that check: a link
// in a read grant (`data/up -> ..`, a checkout's own) copied into a write grant let the tool
// write the project's splice.json through it. With a filter Node takes its JavaScript walk,
// whose `symlinkSync` is checked; so every `cpSync` gets one (the tool's, or one that keeps
// everything), and a link in the tree is refused as `fs.symlink` refuses it. Node calls the
// filter as a method of its options: the tool's is called from the host's, so it never holds
// them (it could clear their `filter`).
//
// Refusals. Node's asynchronous recursive removal (`fs.rm`/`fs.rmdir` with a callback and
// `fs.promises.rm`/`rmdir`, `recursive: true`, on a directory) lstats the path, then calls
// the native `rmdir` from inside the lstat's callback, where the permission model's refusal
// is thrown instead of passed on: no callback, no rejection, an uncaught exception that ends
// the call, whatever `try`/`catch` the tool wrapped around it. So such a removal is refused
// here first, with Node's own error (`ERR_ACCESS_DENIED`, `FileSystemWrite`, the path), the
// way Node refuses every other asynchronous call: in the callback, on the next tick, or as
// the promise's rejection. Node still checks every removal it makes; this only answers first
// where its answer would not reach the tool. What the host looks at, Node is then given: the
// path as the string the host checked and the options as a copy it read once. Node read the
// tool's own again, and a getter (a URL's own `pathname`, an object Node takes for a URL,
// `recursive`) that answered the host one thing and Node another threw uncaught all the same;
// bytes that are not UTF-8 name no path the host can check, and are refused.
//
// Crashes. `fs.cpSync` checks its paths in C++ (`CpSyncCheckPaths`), which asks
// `std::filesystem::equivalent` of a destination that exists as a link without catching its
// exception: a destination that is a link leading nowhere (dangling, a loop, and with the
// file view every link out of the grants) aborted the process, TOOL_CRASHED whatever the
// tool caught (the fs_walk_os fuzz target found it; Node 24.19). So a destination the tool may
// write that is a link (`readlink` answers: no `Stats`, whose getters a tool can redefine) is
// stat'ed first, and one that resolves nowhere gets Node's own error from that stat (ENOENT,
// ELOOP…); Node is given the path as the string the host looked at.
import { ACCESS_DENIED } from './codes.mjs';
import { deniedError } from './module_guard.mjs';
import { clearForCopy } from './file_copies.mjs';
import { pathText } from './fs_paths.mjs';
import {
  ErrorCtor, apply, builtin, keys, nextTick, rejected, setOwn,
} from './pristine.mjs';

const { isPromise } = builtin('node:util').types;
const { resolve } = builtin('node:path');
// Node's own, before any tool code runs.
const { readlinkSync, statSync } = builtin('node:fs');
// Node's own: path.resolve would call whatever `process.cwd` the tool put there.
const cwd = process.cwd;
// Node's own, taken before any tool code runs (undefined without --permission: tests only).
const permission = process.permission;
const permissionHas = permission === undefined ? undefined : permission.has;

/** ``options``' own enumerable properties in a null-prototype copy, each read once, as
 * Node's own spread of them reads them. */
function ownCopy(options) {
  const copy = { __proto__: null };
  const names = keys(options);
  for (let i = 0; i < names.length; i += 1) setOwn(copy, names[i], options[names[i]]);
  return copy;
}

/** Node's refusal of a write to the path of a removal's ``args`` (path, options, …), when a
 * recursive removal of it would be one Node throws uncaught (readable, not writable); null
 * otherwise. ``args`` then hold what the host looked at: the options copied, and the path of
 * a recursive removal as its string (see the top of this module). */
export function refusedRemoval(args) {
  if (permissionHas === undefined) return null;
  const options = args[1];
  if (options === null || typeof options !== 'object') return null;
  const copy = ownCopy(options);
  args[1] = copy;
  if (!copy.recursive) return null;
  const path = args[0];
  const text = pathText(path);
  if (text === undefined) {
    // Bytes that are not UTF-8, or an object Node might still read as a URL (anything else
    // Node refuses itself, at once).
    const object = (typeof path === 'object' && path !== null) || typeof path === 'function';
    return object ? deniedError('a recursive removal of a path the host cannot read') : null;
  }
  args[0] = text;
  const resource = apply(resolve, undefined, [apply(cwd, process, []), text]);
  if (!apply(permissionHas, permission, ['fs.read', resource])) return null;
  if (apply(permissionHas, permission, ['fs.write', resource])) return null;
  const err = new ErrorCtor(
    'Access to this API has been restricted. Use --allow-fs-write to manage permissions.',
  );
  setOwn(err, 'code', ACCESS_DENIED);
  setOwn(err, 'permission', 'FileSystemWrite');
  setOwn(err, 'resource', resource);
  return err;
}

/** ``fs.rm``/``fs.rmdir`` (path, options, callback) refusing first as ``refusedRemoval``
 * says. The callback is the third argument, where Node finds it (options being no function
 * then): taken from the last, `rm(dir, options, callback, 'x')` went to Node uncaught. */
export function guardCallbackRemoval(fn) {
  return function remove(...args) {
    const callback = args[2];
    const err = args.length > 2 ? refusedRemoval(args) : null;
    if (err !== null && typeof callback === 'function') {
      apply(nextTick, process, [callback, err]);
      return undefined;
    }
    return apply(fn, this, args);
  };
}

/** ``fs.promises.rm``/``rmdir`` rejecting first as ``refusedRemoval`` says. */
export function guardPromiseRemoval(fn) {
  return function remove(...args) {
    const err = refusedRemoval(args);
    if (err !== null) return rejected(err);
    return apply(fn, this, args);
  };
}

/** The filter the host gives ``fs.cpSync``: the tool's ``filter`` (or one that keeps every
 * entry, Node's default) called with no `this` (Node calls a filter as a method of its own
 * options, whose `filter` it reads again at every directory: a filter that set
 * `this.filter = undefined` brought back the C++ copy of every directory after), and an
 * entry kept is cleared for the copy (file_copies.mjs clearForCopy). A promise goes back to
 * Node, which refuses it. */
function hostFilter(filter, force) {
  return function filter_(src, dest) {
    const keep = filter === undefined ? true : apply(filter, undefined, [src, dest]);
    if (isPromise(keep) || !keep) return keep;
    clearForCopy(src, dest, force);
    return true;
  };
}

/** ``args``' destination (cpSync's second argument) as the string the host looked at, after
 * throwing Node's stat error for a link there that resolves nowhere (see the top of this
 * module). A path the host cannot read as a string is refused when it is an object (Node
 * might take it for a URL), and goes to Node, which refuses it, otherwise. */
function checkedDestination(args) {
  const dest = args[1];
  const text = pathText(dest);
  if (text === undefined) {
    const object = (typeof dest === 'object' && dest !== null) || typeof dest === 'function';
    if (object) throw deniedError('a copy to a path the host cannot read');
    return;
  }
  args[1] = text;
  const resource = apply(resolve, undefined, [apply(cwd, process, []), text]);
  if (permissionHas !== undefined && !apply(permissionHas, permission, ['fs.write', resource])) {
    return; // Node refuses the copy first
  }
  try {
    apply(readlinkSync, undefined, [text]);
  } catch {
    return; // no link there (or none the tool may read): Node answers for it
  }
  apply(statSync, undefined, [text]);
}

/** ``fs.cpSync`` always given a filter of the host's, so that Node copies by its checked
 * walk, and never allowed to copy over a file itself. Options that are not an object go to
 * Node as they are (it refuses them); an object's own enumerable options are copied, as
 * Node's own spread of them does.
 *
 * A file found where Node copies one (`force`, its default) is removed by the host's filter,
 * but Node looks again after the filter (its `lstat`), and what it finds there it copies
 * over in C++ (`cpSyncOverrideFile`, see file_copies.mjs), with the source's mode. The
 * filter's removal left files there: a source path of 4,095 bytes (`${src}/` too long to
 * tell a directory) or a file granted alone (its directory's real path refused), and a
 * setter of the tool's on `Object.prototype`, run by Node's `Stats` of the source after the
 * filter, put one back; as root and in-process a set-user-ID program copied so was 04755.
 * So Node is given `force: false` and `errorOnExist: true`: a file the filter did not
 * clear is refused `EEXIST`, never copied over. */
export function guardCopySync(fn) {
  return function cpSync(...args) {
    const options = args[2];
    if (options === undefined || (options !== null && typeof options === 'object')) {
      const copy = options === undefined ? { __proto__: null } : ownCopy(options);
      const { filter, force, errorOnExist } = copy;
      if (filter === undefined || typeof filter === 'function') {
        setOwn(copy, 'filter', hostFilter(filter, force));
      }
      // Anything else than a boolean or nothing goes to Node, which refuses it.
      if ((force === undefined || force === true)
        && (errorOnExist === undefined || typeof errorOnExist === 'boolean')) {
        setOwn(copy, 'force', false);
        setOwn(copy, 'errorOnExist', true);
      }
      args[2] = copy;
    }
    if (args.length > 1) checkedDestination(args);
    return apply(fn, this, args);
  };
}
