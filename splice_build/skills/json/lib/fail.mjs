/**
 * Errors of @splice/json. The runtime reports a thrown error as TOOL_ERROR with its message, so
 * every message starts with the skill's own code ("INVALID_JSON: ...").
 */
export function fail(code, message) {
  return new Error(`${code}: ${message}`);
}
