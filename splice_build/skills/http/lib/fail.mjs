/**
 * Errors of @splice/http. The runtime reports a thrown error as TOOL_ERROR with its message, so
 * every message starts with the skill's own code ("INVALID_URL: ..."). Refusals of the network
 * guard are NOT wrapped: they keep their code and reach the caller as PERMISSION_DENIED.
 */
export function fail(code, message) {
  return new Error(`${code}: ${message}`);
}

/** The guard's refusal code (docs/network-security.md): such errors are re-thrown unchanged. */
export const ACCESS_DENIED = "ERR_ACCESS_DENIED";

/** The cause code of the guard's "body larger than 16 MiB" failure. */
export const GUARD_TOO_LARGE = "ERR_SPLICE_RESPONSE_TOO_LARGE";
