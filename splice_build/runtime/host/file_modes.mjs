// A tool's files stay closed to other users. The sandbox starts the tool under a umask that
// masks others' write, and the group's unless the program's umask gave the group write
// (runtime/isolation/child.py close_to_others). A tool could undo that: `process.umask(0)`
// or `chmod 0777` on a directory of its write grant let any local user plant a link there,
// and the tool's next call wrote through it to any file of the user who runs Splice (Node
// follows links in a grant wherever they lead; without the file view nothing else stops it).
// So no umask may drop a bit of the start's write mask, and no chmod may set one: both are
// refused with ERR_ACCESS_DENIED, as a write outside the grants is.
//
// No umask masks the set-user-ID and set-group-ID bits either, which the OS layer's seccomp
// filter refuses in every mode (docs/security.md): without it, a tool that wrote a program
// into its write grant and made it set-user-ID (`chmod 04755`) let any local user run it as
// the user who ran Splice (uid 65534 ran such a copy of `id`: euid=0(root)), and as root,
// which keeps the bits through a write, `writeFile(p, bytes, { mode: 0o4755 })` made one at
// once. So no chmod sets either bit and no file is created with one (`open`, `openSync`,
// `writeFileSync`, fs/promises' `open`, `writeFile` and `appendFile`; `writeFile`,
// `appendFile`, `appendFileSync` and write streams reach one of them; `mkdir` drops both).
// Nor may a tool give a file away (`chown`): as root it could hand another user a directory.
import { deniedError } from './module_guard.mjs';
import { apply, nextTick, rejected, setOwn, stringCharCodeAt } from './pristine.mjs';

const umask = process.umask;
// Read before any tool code runs (process.umask() with no argument only reads).
export const CLOSED = apply(umask, process, []) & 0o022;
// S_ISUID | S_ISGID
const SET_ID = 0o6000;
// The ids a chown may name besides -1 (no change).
const OWN_UID = apply(process.geteuid, process, []);
const OWN_GID = apply(process.getegid, process, []);

/** ``mode`` as Node reads it: a number, or a string of octal digits of any length (Node's
 * parseFileMode takes `'0000000000777'` as 0o777); undefined for anything else, which Node
 * refuses itself. A string's value is kept to its low 32 bits, the bits a mode has (Node
 * refuses a larger one). */
function modeValue(mode) {
  if (typeof mode === 'number') return mode;
  if (typeof mode !== 'string' || mode.length === 0) return undefined;
  let value = 0;
  for (let i = 0; i < mode.length; i += 1) {
    const digit = apply(stringCharCodeAt, mode, [i]) - 48;
    if (!(digit >= 0 && digit <= 7)) return undefined;
    value = (value * 8 + digit) % 0x100000000;
  }
  return value;
}

/** The refusal of a chmod to ``mode`` that gives other users a write the start's umask
 * masks or sets a set-ID bit, or null. */
function openingMode(mode) {
  const value = modeValue(mode);
  if (value === undefined || (value & (CLOSED | SET_ID)) === 0) return null;
  return deniedError('a file mode that lets other users write, or run a file as its owner');
}

/** The refusal of a chown to ``uid`` and ``gid`` that gives a file to another user or group
 * (only -1, no change, and the process's own ids pass), or null. */
function givingAway(uid, gid) {
  if ((uid === -1 || uid === OWN_UID) && (gid === -1 || gid === OWN_GID)) return null;
  return deniedError('a file owner other than the user running the tool');
}

/** The refusal of a FileHandle's method ``name`` called with ``args`` (its `chmod` and
 * `chown` take what `fchmod` and `fchown` take after the descriptor), or null. Node 24
 * refuses both under its permission model anyway; this holds should it allow them. */
export function handleRefusal(name, args) {
  if (name === 'chmod') return openingMode(args[0]);
  if (name === 'chown') return givingAway(args[0], args[1]);
  return null;
}

/** ``fn`` refusing the calls ``refusal`` (the arguments → an error or null) refuses, as Node
 * refuses in its ``form`` (`sync`: thrown; `callback`: passed to the last argument on the
 * next tick; `promise`: rejected). */
function refusing(fn, form, refusal) {
  return function guarded(...args) {
    const err = refusal(args);
    if (err === null) return apply(fn, this, args);
    if (form === 'promise') return rejected(err);
    const callback = args[args.length - 1];
    if (form === 'sync' || typeof callback !== 'function') throw err;
    apply(nextTick, process, [callback, err]);
    return undefined;
  };
}

/** ``fs.chmod``-like ``fn`` (a path or descriptor, then the mode) refusing an opening mode. */
export function guardModeCall(fn, form) {
  return refusing(fn, form, (args) => openingMode(args[1]));
}

/** ``fs.chown``-like ``fn`` (a path or descriptor, then uid and gid) refusing to give the
 * file away: as root, a tool gave a directory of its write grant to uid 65534, who could
 * plant a link there; a user in several groups could give one to another group. */
export function guardOwnerCall(fn, form) {
  return refusing(fn, form, (args) => givingAway(args[1], args[2]));
}

/** ``options`` of a call that creates a file, with their ``mode`` read once and kept as an
 * own property of options that inherit the rest (a getter could tell the host one mode and
 * Node another); a string or anything else goes as it is. Returns the mode. */
function fixedMode(args, at) {
  const options = args[at];
  if (options === null || typeof options !== 'object') return undefined;
  const mode = options.mode;
  const fixed = { __proto__: options };
  setOwn(fixed, 'mode', mode);
  args[at] = fixed;
  return mode;
}

/** ``fn``, a call that creates a file, refusing a mode with a set-ID bit: ``at`` is the index
 * of its mode, or of its options when ``inOptions``. The umask masks the rest of a new
 * file's mode. */
export function guardCreation(fn, at, inOptions, form) {
  return refusing(fn, form, (args) => {
    const value = modeValue(inOptions ? fixedMode(args, at) : args[at]);
    if (value === undefined || (value & SET_ID) === 0) return null;
    return deniedError('a file mode that runs the file as its owner');
  });
}

/** process.umask: reads as before; a mask that keeps the start's closed bits is set. */
export function guardedUmask(...args) {
  if (args.length === 0 || args[0] === undefined) return apply(umask, process, args);
  const value = modeValue(args[0]);
  if (value !== undefined && (value & CLOSED) !== CLOSED) {
    throw deniedError('a umask that lets other users write');
  }
  return apply(umask, process, args);
}
