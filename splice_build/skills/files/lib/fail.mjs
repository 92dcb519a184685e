/**
 * Errors of @splice/files. The runtime reports a thrown error as TOOL_ERROR with its message, so
 * every message starts with the skill's own code ("PATH_OUTSIDE_SANDBOX: ..."). Messages name
 * paths only as the caller gave them (relative to workspace/), never as absolute paths.
 */
export function fail(code, message) {
  return new Error(`${code}: ${message}`);
}

/** A caller's path for messages: JSON-quoted, so control characters are visible and harmless. */
export function quote(path) {
  return JSON.stringify(path);
}
