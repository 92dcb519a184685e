/**
 * The tool result for a response: status, a few headers and the body as JSON, text or base64
 * (bodyType), chosen by responseType and the content type.
 */
import { fail } from "./fail.mjs";

/** Response headers copied into the result (when present). */
export const RESULT_HEADERS = Object.freeze([
  "content-type", "content-length", "etag", "last-modified", "cache-control", "date", "location", "retry-after",
]);

/** Deeper JSON is refused: the runtime limits tool output to 512 levels. */
export const MAX_JSON_DEPTH = 500;

/** A result whose JSON is larger than this would exceed the runtime's 1 MiB output limit. */
export const MAX_RESULT_BYTES = 1000000;

const TEXT_TYPES = new Set([
  "application/xml", "application/javascript", "application/ecmascript", "application/x-www-form-urlencoded",
  "application/x-ndjson", "application/yaml", "application/toml", "application/graphql",
]);

function mediaType(contentType) {
  return (contentType ?? "").split(";", 1)[0].trim().toLowerCase();
}

function charsetOf(contentType) {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? "");
  return match ? match[1] : "utf-8";
}

function isJsonType(type) {
  return type === "application/json" || type === "text/json" || type.endsWith("+json");
}

function isTextType(type) {
  return type.startsWith("text/") || type.endsWith("+xml") || TEXT_TYPES.has(type);
}

function decodeText(data, contentType) {
  let decoder;
  try {
    decoder = new TextDecoder(charsetOf(contentType));
  } catch {
    decoder = new TextDecoder("utf-8");
  }
  return decoder.decode(data);
}

function isUtf8(data) {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(data);
    return true;
  } catch {
    return false;
  }
}

function tooDeep(value) {
  const stack = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop();
    if (item === null || typeof item !== "object") continue;
    if (depth + 1 > MAX_JSON_DEPTH) return true;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
}

function parseJson(data) {
  let value;
  try {
    value = JSON.parse(new TextDecoder("utf-8").decode(data));
  } catch (error) {
    throw fail("INVALID_JSON_RESPONSE", `the response body is not JSON: ${error.message}`);
  }
  if (tooDeep(value)) throw fail("INVALID_JSON_RESPONSE", `the response JSON is nested deeper than ${MAX_JSON_DEPTH} levels`);
  return value;
}

/** ``{ bodyType, json | text | base64 }`` for the body bytes. */
function body(data, contentType, responseType) {
  if (data.length === 0) return { bodyType: "empty" };
  const type = mediaType(contentType);
  if (responseType === "json") return { bodyType: "json", json: parseJson(data) };
  if (responseType === "text") return { bodyType: "text", text: decodeText(data, contentType) };
  if (isJsonType(type)) {
    // auto: a body labelled JSON that does not parse is returned as text, not refused.
    try {
      return { bodyType: "json", json: parseJson(data) };
    } catch {
      return { bodyType: "text", text: decodeText(data, contentType) };
    }
  }
  if (isTextType(type) || (type === "" && isUtf8(data))) {
    return { bodyType: "text", text: decodeText(data, contentType) };
  }
  return { bodyType: "base64", base64: Buffer.from(data).toString("base64") };
}

export function describeResponse(response, data, responseType) {
  const headers = {};
  for (const name of RESULT_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  const result = {
    url: response.url,
    status: response.status,
    statusText: response.statusText,
    ok: response.ok,
    redirected: response.redirected,
    headers,
    ...body(data, headers["content-type"], responseType),
    bytes: data.length,
  };
  const size = Buffer.byteLength(JSON.stringify(result), "utf8");
  if (size > MAX_RESULT_BYTES) {
    throw fail("RESPONSE_TOO_LARGE", `the response does not fit in a tool result (${size} bytes as JSON; at most ${MAX_RESULT_BYTES})`);
  }
  return result;
}
