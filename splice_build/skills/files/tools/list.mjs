/**
 * files.list: the entries of a workspace/ directory, sorted by name, breadth first. Links are
 * listed as "symlink" and never followed; credential-like names are left out and counted in
 * `hidden`.
 */
import { readdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import { fail, quote } from "../lib/fail.mjs";
import { checkPath, isSensitiveName } from "../lib/policy.mjs";
import { inspect, isInside, lstatOrNull, translate, workspaceRoot } from "../lib/workspace.mjs";

export const DEFAULT_MAX_ENTRIES = 500;
export const MAX_DEPTH = 16;

function typeOf(stat) {
  if (stat.isSymbolicLink()) return "symlink";
  if (stat.isDirectory()) return "directory";
  if (stat.isFile()) return "file";
  return "other";
}

/** Names in UTF-16 code-unit order (JavaScript's `<`), the order every Splice sorts in. */
function byName(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Directory names, re-checked around the read: a real directory before, and afterwards still the
 * same directory (device and inode) whose real path is inside workspace/, so a directory swapped
 * for a link while it was read never lists what the link points at.
 */
async function namesIn(root, abs, display) {
  const before = await lstatOrNull(abs, display, { bigint: true });
  if (!before) return [];
  if (before.isSymbolicLink()) throw fail("PATH_OUTSIDE_SANDBOX", `${quote(display)} is a symbolic link; links are never followed`);
  if (!before.isDirectory()) return [];
  let names;
  let real;
  try {
    names = await readdir(abs);
    real = await realpath(abs);
  } catch (error) {
    throw translate(error, display);
  }
  const after = await lstatOrNull(abs, display, { bigint: true });
  if (!isInside(root, real) || !after || after.dev !== before.dev || after.ino !== before.ino) {
    throw fail("PATH_OUTSIDE_SANDBOX", `${quote(display)} changed while it was being listed`);
  }
  return names.sort(byName);
}

export default async function list(input, ctx) {
  const requested = input.path ?? ".";
  const segments = checkPath(requested, { allowRoot: true });
  const display = segments.length === 0 ? "." : segments.join("/");
  const maxEntries = input.maxEntries ?? DEFAULT_MAX_ENTRIES;
  const root = await workspaceRoot(ctx);
  const { abs, stat } = await inspect(root, segments);
  if (!stat) throw fail("NOT_FOUND", `${quote(display)} does not exist in workspace/`);
  if (!stat.isDirectory()) throw fail("NOT_A_DIRECTORY", `${quote(display)} is not a directory`);

  const entries = [];
  let hidden = 0;
  let truncated = false;
  const queue = [{ abs, rel: segments, depth: 1 }];
  while (queue.length > 0 && !truncated) {
    const dir = queue.shift();
    for (const name of await namesIn(root, dir.abs, dir.rel.join("/") || ".")) {
      if (isSensitiveName(name)) {
        hidden++;
        continue;
      }
      if (entries.length >= maxEntries) {
        truncated = true;
        break;
      }
      const rel = [...dir.rel, name];
      const entryStat = await lstatOrNull(join(dir.abs, name), rel.join("/"));
      if (!entryStat) continue; // removed since readdir
      const type = typeOf(entryStat);
      entries.push({ path: rel.join("/"), type, size: type === "file" ? entryStat.size : 0 });
      if (type === "directory" && input.recursive && dir.depth < MAX_DEPTH) {
        queue.push({ abs: join(dir.abs, name), rel, depth: dir.depth + 1 });
      }
    }
  }
  return { path: display, entries, truncated, hidden };
}
