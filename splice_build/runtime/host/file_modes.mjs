// A tool's files stay closed to other users. The sandbox starts the tool under a umask that
// masks others' write, and the group's unless the program's umask gave the group write
// (runtime/isolation/child.py close_to_others). A tool could undo that: `process.umask(0)`
// or `chmod 0777` on a directory of its write grant let any local user plant a link there,
// and the tool's next call wrote through it to any file of the user who runs Splice (Node
// follows links in a grant wherever they lead; without the file view nothing else stops it).
// So no umask may drop a bit of the start's write mask, and no chmod may set one: both are
// refused with ERR_ACCESS_DENIED, as a write outside the grants is.
import { deniedError } from './module_guard.mjs';
import { apply, nextTick, rejected, stringCharCodeAt } from './pristine.mjs';

const umask = process.umask;
// Read before any tool code runs (process.umask() with no argument only reads).
const CLOSED = apply(umask, process, []) & 0o022;

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

/** The refusal of a file ``mode`` that gives other users a write the start's umask masks,
 * or null. */
export function openingMode(mode) {
  const value = modeValue(mode);
  if (value === undefined || (value & CLOSED) === 0) return null;
  return deniedError('a file mode that lets other users write');
}

/** ``fs.chmod``-like ``fn`` (path or descriptor, mode, callback unless ``Sync``) refusing an
 * opening mode: thrown, or passed to the callback on the next tick. */
export function guardModeCall(fn, sync) {
  return function chmod(...args) {
    const err = openingMode(args[1]);
    if (err === null) return apply(fn, this, args);
    const callback = args[args.length - 1];
    if (sync || typeof callback !== 'function') throw err;
    apply(nextTick, process, [callback, err]);
    return undefined;
  };
}

/** ``fs.promises.chmod``-like ``fn`` rejecting an opening mode. */
export function guardModePromise(fn) {
  return function chmod(...args) {
    const err = openingMode(args[1]);
    return err === null ? apply(fn, this, args) : rejected(err);
  };
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
