/**
 * File-system checks of @splice/files below the string policy. Node's permission model limits the
 * process to workspace/ by path *string*, but it follows links, so this module never follows one:
 *
 * - every existing component of a path is lstat'ed; a symbolic link or junction anywhere is
 *   PATH_OUTSIDE_SANDBOX (a link's real location is not the in-workspace path it is reached by);
 * - files are opened with O_NOFOLLOW (where the platform has it) and O_NONBLOCK (a FIFO must not
 *   hang the call), then checked again through the descriptor before a byte is read or written:
 *   a regular file, exactly one link (a hard link can alias a file outside), and the same device
 *   and inode as the in-workspace path, whose real path must still be inside workspace/.
 *
 * Residual limitation (docs/skills.md): another process changing the workspace concurrently could swap
 * a parent directory for a link between these checks and the creation of a *new* file.
 */
import { constants } from "node:fs";
import { lstat, mkdir, open, realpath } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";
import { fail, quote } from "./fail.mjs";

export const WORKSPACE_DIR = "workspace";

/** Flags missing on a platform (O_NOFOLLOW/O_NONBLOCK on Windows) are 0. */
export const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
export const O_NONBLOCK = constants.O_NONBLOCK ?? 0;

/** Turns a file-system error into the skill's codes; unknown errors pass through unchanged. */
export function translate(error, display) {
  switch (error?.code) {
    case "ENOENT":
      return fail("NOT_FOUND", `${quote(display)} does not exist in workspace/`);
    case "ENOTDIR":
      return fail("NOT_A_DIRECTORY", `a parent of ${quote(display)} is not a directory`);
    case "EISDIR":
    case "ENXIO":
      return fail("NOT_A_FILE", `${quote(display)} is not a regular file`);
    case "EEXIST":
      return fail("ALREADY_EXISTS", `${quote(display)} already exists (use mode "overwrite" or "append")`);
    case "ELOOP":
      return fail("PATH_OUTSIDE_SANDBOX", `${quote(display)} is a symbolic link; links are never followed`);
    case "ENAMETOOLONG":
      return fail("INVALID_PATH", `${quote(display)} has a name that is too long for the file system`);
    case "ERR_ACCESS_DENIED":
      return fail("PATH_OUTSIDE_SANDBOX", `${quote(display)} resolves outside workspace/`);
    default:
      return error;
  }
}

/** lstat, or null when the path does not exist. */
export async function lstatOrNull(abs, display, options) {
  try {
    return await lstat(abs, options);
  } catch (error) {
    if (error?.code === "ENOENT") return null;
    throw translate(error, display);
  }
}

function linkError(segments) {
  return fail("PATH_OUTSIDE_SANDBOX", `${quote(segments.join("/"))} is a symbolic link or junction; links are never followed`);
}

/** True when `target` is `root` or below it. */
export function isInside(root, target) {
  const rel = relative(root, target);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/**
 * The canonical workspace directory, created on first use. workspace/ itself must be a real
 * directory: a link there would move the whole sandbox elsewhere.
 */
export async function workspaceRoot(ctx) {
  const dir = join(ctx.paths.project, WORKSPACE_DIR);
  let stat = await lstatOrNull(dir, ".");
  if (!stat) {
    await mkdir(dir).catch((error) => {
      if (error?.code !== "EEXIST") throw error;
    });
    stat = await lstatOrNull(dir, ".");
  }
  if (!stat || stat.isSymbolicLink() || !stat.isDirectory()) {
    throw fail("PATH_OUTSIDE_SANDBOX", "workspace/ is not a real directory (a link or a file)");
  }
  return realpath(dir);
}

/**
 * Walks `segments` below `root` with lstat, refusing links and non-directories on the way.
 * Returns `{ abs, stat }`; `stat` is null when the path does not exist, and `existing` counts the
 * leading segments that do.
 */
export async function inspect(root, segments) {
  let abs = root;
  for (let k = 0; k < segments.length; k++) {
    abs = join(abs, segments[k]);
    const stat = await lstatOrNull(abs, segments.join("/"));
    if (!stat) return { abs: join(root, ...segments), stat: null, existing: k };
    if (stat.isSymbolicLink()) throw linkError(segments.slice(0, k + 1));
    if (k < segments.length - 1 && !stat.isDirectory()) {
      throw fail("NOT_A_DIRECTORY", `${quote(segments.slice(0, k + 1).join("/"))} is not a directory`);
    }
    if (k === segments.length - 1) return { abs, stat, existing: segments.length };
  }
  return { abs: root, stat: await lstat(root), existing: 0 };
}

/**
 * Creates the missing directories `segments[existing..]` one at a time, each checked to be a real
 * directory (not a link someone put there) before going deeper.
 */
export async function createDirectories(root, segments, existing) {
  let abs = join(root, ...segments.slice(0, existing));
  for (let k = existing; k < segments.length; k++) {
    abs = join(abs, segments[k]);
    try {
      await mkdir(abs);
    } catch (error) {
      if (error?.code !== "EEXIST") throw translate(error, segments.slice(0, k + 1).join("/"));
    }
    const stat = await lstat(abs);
    if (stat.isSymbolicLink()) throw linkError(segments.slice(0, k + 1));
    if (!stat.isDirectory()) throw fail("NOT_A_DIRECTORY", `${quote(segments.slice(0, k + 1).join("/"))} is not a directory`);
  }
}

/** fs.open with the skill's error codes. */
export async function openChecked(abs, flags, display) {
  try {
    return await open(abs, flags, 0o644);
  } catch (error) {
    throw translate(error, display);
  }
}

/** Refuses a file with more than one link (HARD_LINK). */
export function assertSingleLink(stat, display) {
  const links = Number(stat.nlink);
  if (links > 1) {
    throw fail("HARD_LINK", `${quote(display)} has ${links} hard links; files with several links are refused because one can alias a file outside workspace/`);
  }
}

/**
 * The descriptor re-check: the opened file must be a regular, single-link file, and the very file
 * the in-workspace path names now (same device and inode), reached without leaving workspace/.
 * Returns the descriptor's stat.
 */
export async function verifyDescriptor(handle, root, abs, display) {
  const opened = await handle.stat({ bigint: true });
  if (!opened.isFile()) throw fail("NOT_A_FILE", `${quote(display)} is not a regular file`);
  assertSingleLink(opened, display);
  let real;
  try {
    real = await realpath(abs);
  } catch {
    throw fail("PATH_OUTSIDE_SANDBOX", `${quote(display)} changed while it was being opened`);
  }
  if (!isInside(root, real)) throw fail("PATH_OUTSIDE_SANDBOX", `${quote(display)} resolves outside workspace/`);
  const current = await lstatOrNull(abs, display, { bigint: true });
  if (!current || current.dev !== opened.dev || current.ino !== opened.ino) {
    throw fail("PATH_OUTSIDE_SANDBOX", `${quote(display)} changed while it was being opened`);
  }
  // Identity and link count from ONE lstat: the descriptor's own count may predate a hard link
  // that was swapped in afterwards (fstat said 1, then the path was re-linked to that file).
  assertSingleLink(current, display);
  return opened;
}
