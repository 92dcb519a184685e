/**
 * The path language of json.pick: `a.b`, `items[0]`, `["key.with.dots"]`, `$` (the whole value)
 * and an optional leading `$.` / `$[`. A dot segment is any run of characters other than
 * `.`, `[` and `]`; a quoted key is a JSON string; an index is a non-negative integer
 * without leading zeros.
 */
import { fail } from "./fail.mjs";

const INDEX = /^(?:0|[1-9][0-9]{0,8})$/;

function invalid(path, why) {
  return fail("INVALID_PATH", `${JSON.stringify(path)}: ${why}`);
}

/** Index just past the closing quote of the JSON string starting at `start`, or -1. */
function endOfQuoted(path, start) {
  let j = start + 1;
  while (j < path.length) {
    if (path[j] === "\\") j += 2;
    else if (path[j] === '"') return j + 1;
    else j++;
  }
  return -1;
}

/** Parses one path into segments: strings are object keys, numbers are array indexes. */
export function parsePickPath(path) {
  if (path === "$") return [];
  let i = path.startsWith("$.") ? 2 : path.startsWith("$[") ? 1 : 0;
  const segments = [];
  let first = true;
  while (first || i < path.length) {
    if (path[i] === "[") {
      if (path[i + 1] === '"') {
        const close = endOfQuoted(path, i + 1);
        if (close === -1 || path[close] !== "]") throw invalid(path, `unterminated ["..."] at ${i}`);
        let key;
        try {
          key = JSON.parse(path.slice(i + 1, close));
        } catch {
          throw invalid(path, `invalid quoted key at ${i}`);
        }
        segments.push(key);
        i = close + 1;
      } else {
        const close = path.indexOf("]", i);
        const index = close === -1 ? "" : path.slice(i + 1, close);
        if (!INDEX.test(index)) throw invalid(path, `expected [index] or ["key"] at ${i}`);
        segments.push(Number(index));
        i = close + 1;
      }
    } else {
      if (!first) {
        if (path[i] !== ".") throw invalid(path, `unexpected ${JSON.stringify(path[i])} at ${i}`);
        i++;
      }
      const start = i;
      while (i < path.length && !".[]".includes(path[i])) i++;
      if (i === start) throw invalid(path, `empty segment at ${start}`);
      segments.push(path.slice(start, i));
    }
    first = false;
  }
  return segments;
}
