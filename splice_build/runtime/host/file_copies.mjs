// A copy gets no mode or owner the tool could not give a file itself. Node's copyFile
// (libuv's uv_fs_copyfile, which every `fs.copyFile` form and the files `fs.cp` and
// `cpSync` copy reach) gives the copy its source's mode with `fchmod`, which no umask masks
// and file_modes.mjs never sees, and, as root, its source's owner. A root-owned
// set-user-ID program in a read grant (a root file system a project unpacks) copied into the
// write grant stayed 04755 through the tool's rewrite of its bytes (root keeps the bits),
// and uid 65534 ran the tool's program as root; a copy of another user's file was theirs.
//
// So the host makes each copy in a directory of its own beside the destination (mkdtemp:
// 0700, so no other user reaches the copy while it has the source's mode), gives it the
// user's own uid and the source's permission bits less the set-ID bits and what the start's
// umask closes, and only then renames it into place (or links it, with COPYFILE_EXCL, which
// refuses an existing destination as Node does). The source's mode is read from a `Stats`
// object a tool can forge, which only decides bits a `chmod` of the tool's could set. Every
// step runs synchronously, the callback and promise forms too: a tool's code running
// between two steps could move the copy out of its directory before its mode was set. Paths
// are made strings first, so that no getter of the tool's runs inside Node's own checks.
//
// `cpSync` onto an existing file (with `force`, its default) does not copy by copyFile: it
// removes the file and copies in C++ (`cpSyncOverrideFile`: std::filesystem's copy_file, or
// libuv's with a `mode`), which gives the copy its source's mode too, and no chmod follows
// for the host to check (a set-user-ID source made a 04755 copy over `out/a`; a 0666 one,
// 0666). So the host's cpSync filter (fs_gaps.mjs) removes such a file first, as that copy
// would: Node then finds no file there and copies by copyFileSync and chmodSync, both
// guarded.
import { deniedError } from './module_guard.mjs';
import { CLOSED } from './file_modes.mjs';
import { pathText } from './fs_paths.mjs';
import {
  PromiseCtor, apply, builtin, getOwnPropertyDescriptor, hasOwn, nextTick, rejected, settle,
} from './pristine.mjs';

const fs = builtin('node:fs');
const { basename, dirname, join } = builtin('node:path');
// Node's own, before any tool code runs.
const {
  accessSync, chmodSync, chownSync, copyFileSync, linkSync, mkdtempSync, renameSync, rmdirSync,
  statSync, unlinkSync,
} = fs;
const realpathNative = fs.realpathSync.native;
const { COPYFILE_EXCL } = fs.constants;
const OWN_UID = apply(process.geteuid, process, []);
const promiseResolve = PromiseCtor.resolve;

/** ``path`` as a string (fs_paths.mjs); anything else is refused. */
function pathString(path) {
  const text = pathText(path);
  if (text === undefined) throw deniedError('a copy named by anything but a path');
  return text;
}

/** Copy ``src`` to ``dest`` as the top of this module says; ``flags`` as Node takes them. */
function copyClosed(src, dest, flags) {
  const from = pathString(src);
  const to = pathString(dest);
  const exclusive = typeof flags === 'number' && (flags & COPYFILE_EXCL) !== 0;
  const inner = typeof flags === 'number' ? flags | COPYFILE_EXCL : flags;
  const mode = statSync(from).mode;
  const bits = (typeof mode === 'number' ? mode : 0) & 0o777 & ~CLOSED;
  const dir = mkdtempSync(join(dirname(to), '.splice-copy-'));
  const copy = join(dir, 'copy');
  try {
    copyFileSync(from, copy, inner);
    chmodSync(copy, bits);
    chownSync(copy, OWN_UID, -1);
    if (exclusive) linkSync(copy, to);
    else renameSync(copy, to);
  } finally {
    try {
      unlinkSync(copy);
    } catch {
      // renamed into place, or never made
    }
    rmdirSync(dir);
  }
}

/** ``fs.copyFileSync``, ``fs.copyFile`` (``form`` callback) or fs/promises' ``copyFile``
 * (``form`` promise) copying as ``copyClosed`` does; a call without a callback goes to Node,
 * which refuses it before it copies anything. */
export function guardCopyFile(fn, form) {
  return function copyFile(...args) {
    if (form === 'sync') return copyClosed(args[0], args[1], args[2]);
    if (form === 'promise') {
      try {
        copyClosed(args[0], args[1], args[2]);
      } catch (err) {
        return rejected(err);
      }
      return settle(apply(promiseResolve, PromiseCtor, [undefined]));
    }
    const callback = args[args.length - 1];
    if (typeof callback !== 'function') return apply(fn, this, args);
    let err = null;
    try {
      copyClosed(args[0], args[1], args.length > 3 ? args[2] : undefined);
    } catch (caught) {
      err = caught;
    }
    apply(nextTick, process, [callback, err]);
    return undefined;
  };
}

/** The code of Node's error ``err`` as Node set it (an own data property); a getter or
 * setter of the tool's on the way is refused. */
function ownCode(err) {
  const d = err !== null && typeof err === 'object'
    ? getOwnPropertyDescriptor(err, 'code') : undefined;
  if (d === undefined || !hasOwn(d, 'value')) {
    throw deniedError('a copy while errors are redefined');
  }
  return d.value;
}

/** ``path``'s real directory joined with its name (one path per entry, whatever the way). */
function entry(path) {
  return join(apply(realpathNative, fs, [dirname(path)]), basename(path));
}

/** Before `cpSync` (with ``force``) copies ``src`` to ``dest``: remove ``dest`` when it is
 * a file or a link and ``src`` is no directory, as Node's C++ copy over it would first
 * (see the top of this module). Nothing is removed where Node refuses the copy itself: a
 * missing or unreadable source, a directory there, or ``src`` and ``dest`` one entry. */
export function clearForCopy(src, dest, force) {
  if (force === false) return;
  const from = pathString(src);
  const to = pathString(dest);
  try {
    accessSync(`${from}/`);
    return; // a directory (or a link to one): Node copies into it, or refuses
  } catch (err) {
    if (ownCode(err) !== 'ENOTDIR') return; // missing or refused: Node says so
  }
  try {
    if (entry(from) === entry(to)) return;
    unlinkSync(to);
  } catch (err) {
    ownCode(err); // nothing there, or a directory: Node answers for it
  }
}
