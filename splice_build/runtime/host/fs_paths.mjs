// A path argument of an fs call as the string Node's permission model checks, for the guards
// that look at a path before Node does (fs_gaps.mjs, file_copies.mjs).
import { URLCtor, apply, builtin, isView } from './pristine.mjs';

const { fileURLToPath } = builtin('node:url');
const strict = new TextDecoder('utf-8', { fatal: true });
const decode = TextDecoder.prototype.decode;

/** ``path`` (a string, a file URL or UTF-8 bytes) as a string; undefined for anything else,
 * a URL that names no file, or bytes that are not UTF-8. */
export function pathText(path) {
  if (typeof path === 'string') return path;
  try {
    if (path instanceof URLCtor) return apply(fileURLToPath, undefined, [path]);
    if (isView(path)) return apply(decode, strict, [path]);
  } catch {
    return undefined;
  }
  return undefined;
}
