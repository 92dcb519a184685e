/**
 * Anonymous, read-only GET requests to the GitHub REST API: the base URL, the request headers,
 * the time and size limits, the rate-limit headers of every answer and the mapping of failures
 * to this skill's codes. No token is ever sent: the package declares no environment variables.
 */
import { ACCESS_DENIED, GUARD_TOO_LARGE, fail } from "./fail.mjs";

// The one host this package may reach (manifest permissions.network). Tests build a variant
// that replaces exactly this line (testing/loopback_variants.py); nothing else names a host.
export const API_BASE = "https://api.github.com";

export const REQUEST_TIMEOUT_MS = 10000;
export const MAX_RESPONSE_BYTES = 1048576;

const HEADERS = Object.freeze({
  accept: "application/vnd.github+json",
  "x-github-api-version": "2022-11-28",
  "user-agent": "splice-github/0.1.0",
});

function integerHeader(headers, name) {
  const text = headers.get(name);
  return text !== null && /^\d+$/.test(text.trim()) ? Number(text.trim()) : null;
}

/** ``{ limit, remaining, resetAt }`` from the x-ratelimit-* headers (null when absent). */
export function rateLimitOf(headers) {
  const reset = integerHeader(headers, "x-ratelimit-reset");
  return {
    limit: integerHeader(headers, "x-ratelimit-limit"),
    remaining: integerHeader(headers, "x-ratelimit-remaining"),
    resetAt: reset === null ? null : new Date(reset * 1000).toISOString(),
  };
}

function messageOf(body) {
  try {
    const data = JSON.parse(body);
    const message = typeof data?.message === "string" ? data.message : "";
    const first = Array.isArray(data?.errors) ? data.errors[0] : undefined;
    const detail = typeof first?.message === "string" ? first.message
      : first && typeof first === "object" ? [first.field, first.code].filter((x) => typeof x === "string").join(" ") : "";
    return [message, detail].filter(Boolean).join(": ").slice(0, 300);
  } catch {
    return "";
  }
}

function isRateLimited(status, headers, message) {
  if (status !== 403 && status !== 429) return false;
  return headers.get("x-ratelimit-remaining") === "0" || headers.get("retry-after") !== null
    || /rate limit/i.test(message);
}

/** When the limit lifts: retry-after (secondary limits) wins, else x-ratelimit-reset. */
function resetTime(headers, rateLimit) {
  const retryAfter = integerHeader(headers, "retry-after");
  if (retryAfter !== null) return new Date(Date.now() + retryAfter * 1000).toISOString();
  return rateLimit.resetAt;
}

function failureOf(response, text, rateLimit, what) {
  const message = messageOf(text);
  const { status } = response;
  if (status === 404) return fail("NOT_FOUND", `${what} not found`);
  if (isRateLimited(status, response.headers, message)) {
    const resetAt = resetTime(response.headers, rateLimit);
    const which = response.headers.get("retry-after") !== null
      ? "GitHub's secondary rate limit was hit"
      : `GitHub's anonymous rate limit${rateLimit.limit === null ? "" : ` of ${rateLimit.limit} requests`} is exhausted`;
    const when = resetAt === null ? "the reset time is unknown" : `it resets at ${resetAt}`;
    return fail("RATE_LIMITED", `${which}; ${when}`);
  }
  return fail("GITHUB_ERROR", `GitHub answered ${status}${message ? `: ${message}` : ""}`);
}

/**
 * GET ``path`` with ``query`` (an object of defined values). ``what`` names the resource for a
 * NOT_FOUND message. Resolves ``{ data, headers, rateLimit }``.
 */
export async function githubGet(path, query, what) {
  const url = new URL(path, API_BASE);
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined) url.searchParams.set(name, String(value));
  }
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error("timeout")), REQUEST_TIMEOUT_MS);
  let response;
  let bytes;
  try {
    response = await fetch(url.href, { headers: HEADERS, signal: controller.signal });
    bytes = new Uint8Array(await response.arrayBuffer());
  } catch (error) {
    if (error?.code === ACCESS_DENIED) throw error;
    if (controller.signal.aborted) throw fail("TIMEOUT", `GitHub did not answer within ${REQUEST_TIMEOUT_MS} ms`);
    if (error?.cause?.code === GUARD_TOO_LARGE) {
      throw fail("RESPONSE_TOO_LARGE", `GitHub's response is larger than ${MAX_RESPONSE_BYTES} bytes`);
    }
    const cause = error?.cause ?? error;
    const code = cause?.code ? ` (${cause.code})` : "";
    throw fail("NETWORK_ERROR", `could not reach GitHub: ${cause?.message ?? String(cause)}${code}`);
  } finally {
    clearTimeout(timer);
  }
  if (bytes.length > MAX_RESPONSE_BYTES) {
    throw fail("RESPONSE_TOO_LARGE", `GitHub's response has ${bytes.length} bytes, more than ${MAX_RESPONSE_BYTES}`);
  }
  const text = new TextDecoder("utf-8").decode(bytes);
  const rateLimit = rateLimitOf(response.headers);
  if (!response.ok) throw failureOf(response, text, rateLimit, what);
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    throw fail("GITHUB_ERROR", `GitHub answered ${response.status} with a body that is not JSON`);
  }
  return { data, headers: response.headers, rateLimit };
}

/** True when the Link header has a rel="next" page. */
export function hasNextPage(headers) {
  const link = headers.get("link") ?? "";
  return link.split(",").some((part) => /;\s*rel="?next"?/i.test(part));
}
