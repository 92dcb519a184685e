/**
 * One HTTP exchange for http.get and http.post: the URL and header checks, the request through
 * the sandbox's guarded fetch (which follows and re-checks redirects and refuses non-public
 * targets), the time limit and the mapping of failures to this skill's codes.
 */
import { ACCESS_DENIED, GUARD_TOO_LARGE, fail } from "./fail.mjs";
import { describeResponse } from "./body.mjs";

export const DEFAULT_TIMEOUT_MS = 10000;
export const DEFAULT_MAX_BYTES = 262144;
export const USER_AGENT = "splice-http/0.1.0";

/** The caller's URL, parsed: absolute http(s) without user name or password, else INVALID_URL. */
export function checkUrl(text) {
  let url;
  try {
    url = new URL(text);
  } catch {
    throw fail("INVALID_URL", `not an absolute URL: ${JSON.stringify(text)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw fail("INVALID_URL", `only http and https URLs are allowed, not "${url.protocol}"`);
  }
  if (url.username !== "" || url.password !== "") {
    throw fail("INVALID_URL", "URLs with a user name or password are not allowed");
  }
  return url;
}

/** A header value must be one line of Latin-1 text without control characters. */
function checkHeaderValue(name, value) {
  for (let i = 0; i < value.length; i += 1) {
    const code = value.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09) || code === 0x7f || code > 0xff) {
      throw fail("INVALID_INPUT", `header "${name}" contains a character not allowed in HTTP headers (position ${i})`);
    }
  }
}

/**
 * The request headers: the few the schema admits (never Authorization or Cookie), plus a
 * default user-agent and, for POST, the body's content type.
 */
export function requestHeaders(given, extra = {}) {
  const headers = { "user-agent": USER_AGENT };
  for (const [name, value] of Object.entries({ ...given, ...extra })) {
    checkHeaderValue(name, value);
    headers[name] = value;
  }
  return headers;
}

function causeOf(error) {
  const cause = error?.cause;
  const code = cause?.code ? ` (${cause.code})` : "";
  return `${cause?.message ?? error?.message ?? String(error)}${code}`;
}

/**
 * Send the request and describe the response. ``options``: method, headers, body,
 * timeoutMs, maxBytes, responseType. 4xx/5xx responses are results with ok: false.
 */
export async function exchange(url, options) {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error("timeout")), timeoutMs);
  let response;
  let data;
  try {
    response = await fetch(url.href, {
      method: options.method,
      headers: options.headers,
      body: options.body,
      redirect: "follow",
      signal: controller.signal,
    });
    data = new Uint8Array(await response.arrayBuffer());
  } catch (error) {
    if (error?.code === ACCESS_DENIED) throw error;
    if (controller.signal.aborted) {
      throw fail("TIMEOUT", `no complete response from ${url.host} within ${timeoutMs} ms`);
    }
    if (error?.cause?.code === GUARD_TOO_LARGE) {
      throw fail("RESPONSE_TOO_LARGE", `the response from ${url.host} is larger than ${maxBytes} bytes`);
    }
    throw fail("NETWORK_ERROR", `request to ${url.host} failed: ${causeOf(error)}`);
  } finally {
    clearTimeout(timer);
  }
  if (data.length > maxBytes) {
    throw fail("RESPONSE_TOO_LARGE", `the response from ${url.host} has ${data.length} bytes, more than maxBytes (${maxBytes})`);
  }
  return describeResponse(response, data, options.responseType ?? "auto");
}
