// A copy gets no mode or owner the tool could not give a file itself. Node's copyFile
// (libuv's uv_fs_copyfile, which every `fs.copyFile` form and the files `fs.cp` and
// `cpSync` copy reach) gives the copy its source's mode with `fchmod`, which no umask masks
// and file_modes.mjs never sees, and, as root, its source's owner. A root-owned
// set-user-ID program in a read grant (a root file system a project unpacks) copied into the
// write grant stayed 04755 through the tool's rewrite of its bytes (root keeps the bits),
// and uid 65534 ran the tool's program as root; a copy of another user's file was theirs.
//
// So the host copies the bytes itself, through descriptors it opens by the paths (which Node
// checks as it checks the tool's own opens): the copy is created 0600 (under the umask) as the user's, and only
// once written gets the source's permission bits less the set-ID bits and what the start's
// umask closes. No copy ever holds a set-ID bit, not for an instant: a copy made by libuv in
// a directory of the host's and fixed after held 04755 while its bytes went in, and a tool
// that looped such copies until its timeout killed it found one left (4 runs of 5) to rename
// and rewrite at its next call. The source's mode is read from a `Stats` object a tool can
// forge, which decides only bits a `chmod` of the tool's could set. COPYFILE_EXCL refuses an
// existing destination, as Node does; COPYFILE_FICLONE copies (a reflink is what libuv tries
// first), COPYFILE_FICLONE_FORCE, which allows nothing but a reflink, is refused. Every step
// runs synchronously, in the callback and promise forms too (the host's descriptors are never
// open while the tool's code runs), and the paths are made strings first, so that no getter
// of the tool's runs inside a step.
//
// The source is opened without blocking and must be a file (or a directory, which Node
// refuses as it reads it: EISDIR): a FIFO in a read grant held the copy at its open until
// the call's timeout, as Node's own copy does (libuv opens it blocking). A FIFO, a socket
// or a device is refused before the copy is created. So is one as the destination, opened
// without blocking too (a FIFO no one reads: ENXIO): a copy onto a FIFO in the write grant
// was held at that open until the timeout in the same way, and it is left as it was.
//
// `cpSync` onto an existing file (with `force`, its default) does not copy by copyFile: it
// removes the file and copies in C++ (`cpSyncOverrideFile`: std::filesystem's copy_file, or
// libuv's with a `mode`), which gives the copy its source's mode too, and no chmod follows
// for the host to check (a set-user-ID source made a 04755 copy over `out/a`; a 0666 one,
// 0666). So the host's cpSync filter (fs_gaps.mjs) removes such a file first, as that copy
// would: Node then finds no file there and copies by copyFileSync and chmodSync, both
// guarded; and Node is told not to copy over one (fs_gaps.mjs guardCopySync), so a file
// found there after all is refused, never copied over in C++.
import { deniedError } from './module_guard.mjs';
import { CLOSED } from './file_modes.mjs';
import { pathText } from './fs_paths.mjs';
import {
  PromiseCtor, Uint8ArrayCtor, apply, builtin, getOwnPropertyDescriptor, hasOwn, nextTick,
  readvSync, rejected, settle, writevSync,
} from './pristine.mjs';

const fs = builtin('node:fs');
const { basename, dirname, join } = builtin('node:path');
// Node's own, before any tool code runs.
const {
  accessSync, chmodSync, closeSync, copyFileSync, fstatSync, openSync, statSync, unlinkSync,
} = fs;
const realpathNative = fs.realpathSync.native;
const {
  COPYFILE_EXCL, COPYFILE_FICLONE_FORCE, O_CREAT, O_EXCL, O_NONBLOCK, O_RDONLY, O_TRUNC,
  O_WRONLY, S_IFDIR, S_IFMT, S_IFREG,
} = fs.constants;
// Node's 'w', without blocking.
const OUTPUT = O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK;
const ArrayBufferCtor = ArrayBuffer;
const promiseResolve = PromiseCtor.resolve;
// The bytes read and written at a time.
const CHUNK = 1 << 20;

/** ``path`` as a string (fs_paths.mjs); anything else is refused. */
function pathString(path) {
  const text = pathText(path);
  if (text === undefined) throw deniedError('a copy named by anything but a path');
  return text;
}

/** Write every byte ``input`` has left to ``output`` (descriptors the host opened). */
function pour(input, output) {
  const buffer = new ArrayBufferCtor(CHUNK);
  const whole = new Uint8ArrayCtor(buffer);
  for (;;) {
    const read = readvSync(input, [whole], null);
    if (read === 0) return;
    for (let done = 0; done < read;) {
      done += writevSync(output, [new Uint8ArrayCtor(buffer, done, read - done)], null);
    }
  }
}

/** Copy ``src`` to ``dest`` as the top of this module says; ``flags`` as Node takes them
 * (anything else goes to Node, which refuses it before it copies). */
function copyClosed(src, dest, flags) {
  const from = pathString(src);
  const to = pathString(dest);
  if (!(flags == null || (typeof flags === 'number' && (flags | 0) === flags && flags >= 0 && flags <= 7))) {
    return apply(copyFileSync, fs, [from, to, flags]);
  }
  const bits = flags == null ? 0 : flags;
  if ((bits & COPYFILE_FICLONE_FORCE) !== 0) throw deniedError('a copy by reflink only');
  const source = statSync(from);
  const mode = source.mode;
  const closed = (typeof mode === 'number' ? mode : 0) & 0o777 & ~CLOSED;
  const exclusive = (bits & COPYFILE_EXCL) !== 0;
  if (!exclusive) {
    const target = statSync(to, { __proto__: null, throwIfNoEntry: false });
    // One file: Node leaves it as it is.
    if (target !== undefined && target.dev === source.dev && target.ino === source.ino) return;
  }
  const input = openSync(from, O_RDONLY | O_NONBLOCK);
  try {
    const kind = fstatSync(input).mode & S_IFMT;
    if (kind !== S_IFREG && kind !== S_IFDIR) {
      throw deniedError('a copy of anything but a file (a FIFO, a socket or a device)');
    }
    const output = openSync(to, (exclusive ? O_EXCL : 0) | OUTPUT, 0o600);
    if ((fstatSync(output).mode & S_IFMT) !== S_IFREG) {
      closeSync(output);
      throw deniedError('a copy onto anything but a file (a FIFO, a socket or a device)');
    }
    try {
      pour(input, output);
    } catch (err) {
      // As libuv, no half copy is left.
      try {
        closeSync(output);
        unlinkSync(to);
      } catch {
        // gone already: the error that matters is the copy's
      }
      throw err;
    }
    closeSync(output);
  } finally {
    closeSync(input);
  }
  chmodSync(to, closed);
  return undefined;
}

/** ``fs.copyFileSync``, ``fs.copyFile`` (``form`` callback) or fs/promises' ``copyFile``
 * (``form`` promise) copying as ``copyClosed`` does. The callback is where Node finds it:
 * the third argument when it is a function (no mode), else the fourth; the host had taken
 * the last one, and `copyFile(src, dest, callback, 'x')` went to Node, which copied with
 * the source's mode and called back. A call without a callback goes to Node without one,
 * and Node refuses it before it copies anything. */
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
    const noMode = typeof args[2] === 'function';
    const mode = noMode ? undefined : args[2];
    const callback = noMode ? args[2] : args[3];
    if (typeof callback !== 'function') return apply(fn, this, [args[0], args[1], mode, callback]);
    let err = null;
    try {
      copyClosed(args[0], args[1], mode);
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

/** Whether ``a`` and ``b`` are one entry; a directory whose real path Node refuses to give
 * (a file granted alone) holds no entry of the other's. */
function oneEntry(a, b) {
  try {
    return entry(a) === entry(b);
  } catch (err) {
    ownCode(err);
    return false;
  }
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
  if (oneEntry(from, to)) return;
  try {
    unlinkSync(to);
  } catch (err) {
    ownCode(err); // nothing there, or a directory: Node answers for it
  }
}
