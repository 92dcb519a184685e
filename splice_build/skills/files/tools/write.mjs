/** files.write: create, overwrite or append to a file in workspace/. */
import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { fail, quote } from "../lib/fail.mjs";
import { checkPath } from "../lib/policy.mjs";
import {
  O_NOFOLLOW,
  O_NONBLOCK,
  assertSingleLink,
  createDirectories,
  inspect,
  openChecked,
  translate,
  verifyDescriptor,
  workspaceRoot,
} from "../lib/workspace.mjs";

export const MAX_CONTENT_BYTES = 1024 * 1024;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const { O_WRONLY, O_CREAT, O_EXCL, O_APPEND } = constants;
const SAFE_OPEN = O_NOFOLLOW | O_NONBLOCK;

function decode(content, encoding) {
  if (encoding === "base64" && !BASE64.test(content)) throw fail("INVALID_CONTENT", "content is not valid base64");
  const data = Buffer.from(content, encoding);
  if (data.length > MAX_CONTENT_BYTES) {
    throw fail("CONTENT_TOO_LARGE", `content is ${data.length} bytes (at most ${MAX_CONTENT_BYTES})`);
  }
  return data;
}

async function writeAll(handle, data, position) {
  let offset = 0;
  while (offset < data.length) {
    const at = position === null ? null : position + offset;
    const { bytesWritten } = await handle.write(data, offset, data.length - offset, at);
    offset += bytesWritten;
  }
}

/**
 * Opens the target. A new file is created exclusively (O_EXCL also refuses a link put there);
 * an existing one is opened WITHOUT truncation, so nothing changes before the descriptor check.
 */
async function openTarget(abs, mode, display) {
  const append = mode === "append" ? O_APPEND : 0;
  try {
    return { handle: await open(abs, O_WRONLY | O_CREAT | O_EXCL | append | SAFE_OPEN, 0o644), created: true };
  } catch (error) {
    if (mode === "create" || error?.code !== "EEXIST") throw translate(error, display);
  }
  return { handle: await openChecked(abs, O_WRONLY | append | SAFE_OPEN, display), created: false };
}

export default async function write(input, ctx) {
  const segments = checkPath(input.path);
  const display = segments.join("/");
  const mode = input.mode ?? "create";
  const data = decode(input.content, input.encoding ?? "utf8");
  const root = await workspaceRoot(ctx);

  const parents = segments.slice(0, -1);
  const parent = await inspect(root, parents);
  if (!parent.stat) {
    if (input.createDirs === false) throw fail("NOT_FOUND", `the parent directory of ${quote(display)} does not exist (createDirs is false)`);
    await createDirectories(root, parents, parent.existing);
  } else if (!parent.stat.isDirectory()) {
    throw fail("NOT_A_DIRECTORY", `${quote(parents.join("/"))} is not a directory`);
  }

  const { abs, stat } = await inspect(root, segments);
  if (stat) {
    if (!stat.isFile()) throw fail("NOT_A_FILE", `${quote(display)} exists and is not a regular file`);
    if (mode === "create") throw fail("ALREADY_EXISTS", `${quote(display)} already exists (use mode "overwrite" or "append")`);
    assertSingleLink(stat, display);
  }

  const { handle, created } = await openTarget(abs, mode, display);
  try {
    await verifyDescriptor(handle, root, abs, display);
    if (mode === "append") await writeAll(handle, data, null);
    else {
      await handle.truncate(0);
      await writeAll(handle, data, 0);
    }
    const { size } = await handle.stat();
    return { path: display, bytes: data.length, size, created };
  } finally {
    await handle.close();
  }
}
