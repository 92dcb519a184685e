/** files.read: one regular file from workspace/, bounded even if it grows during the read. */
import { constants } from "node:fs";
import { fail, quote } from "../lib/fail.mjs";
import { checkPath } from "../lib/policy.mjs";
import { O_NOFOLLOW, O_NONBLOCK, assertSingleLink, inspect, openChecked, verifyDescriptor, workspaceRoot } from "../lib/workspace.mjs";

export const DEFAULT_MAX_BYTES = 262144;

/** Reads at most `limit + 1` bytes, so a file that grew past the limit is noticed, not buffered. */
async function readBounded(handle, limit, display) {
  const buffer = Buffer.alloc(limit + 1);
  let length = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
    if (bytesRead === 0) return buffer.subarray(0, length);
    length += bytesRead;
    if (length > limit) throw fail("FILE_TOO_LARGE", `${quote(display)} is larger than ${limit} bytes (maxBytes; at most 524288)`);
  }
}

export default async function read(input, ctx) {
  const segments = checkPath(input.path);
  const display = segments.join("/");
  const maxBytes = input.maxBytes ?? DEFAULT_MAX_BYTES;
  const encoding = input.encoding ?? "utf8";
  const root = await workspaceRoot(ctx);
  const { abs, stat } = await inspect(root, segments);
  if (!stat) throw fail("NOT_FOUND", `${quote(display)} does not exist in workspace/`);
  if (!stat.isFile()) throw fail("NOT_A_FILE", `${quote(display)} is not a regular file`);
  assertSingleLink(stat, display);
  if (stat.size > maxBytes) {
    throw fail("FILE_TOO_LARGE", `${quote(display)} is ${stat.size} bytes (maxBytes ${maxBytes}; at most 524288)`);
  }
  const handle = await openChecked(abs, constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK, display);
  try {
    const opened = await verifyDescriptor(handle, root, abs, display);
    const bytes = await readBounded(handle, maxBytes, display);
    return {
      path: display,
      size: bytes.length,
      encoding,
      content: bytes.toString(encoding),
      modifiedAt: opened.mtime.toISOString(),
    };
  } finally {
    await handle.close();
  }
}
