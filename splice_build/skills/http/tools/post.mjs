/** http.post: POST a JSON or text body to a public http(s) URL; the response as for http.get. */
import { fail } from "../lib/fail.mjs";
import { checkUrl, exchange, requestHeaders } from "../lib/request.mjs";

/** Exactly one of ``json`` and ``text`` → the body bytes and their default content type. */
function requestBody(input) {
  const hasJson = Object.hasOwn(input, "json");
  const hasText = Object.hasOwn(input, "text");
  if (hasJson === hasText) throw fail("INVALID_INPUT", "give exactly one of json and text as the request body");
  if (input.contentType !== undefined && input.contentType.trim() === "") {
    throw fail("INVALID_INPUT", "contentType is blank");
  }
  if (hasJson) return { body: JSON.stringify(input.json), contentType: "application/json" };
  return { body: input.text, contentType: "text/plain; charset=utf-8" };
}

export default function post(input) {
  const url = checkUrl(input.url);
  const { body, contentType } = requestBody(input);
  return exchange(url, {
    method: "POST",
    headers: requestHeaders(input.headers ?? {}, { "content-type": input.contentType ?? contentType }),
    body,
    timeoutMs: input.timeoutMs,
    maxBytes: input.maxBytes,
    responseType: input.responseType,
  });
}
