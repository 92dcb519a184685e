/** http.get: GET a public http(s) URL and return status, selected headers and the body. */
import { checkUrl, exchange, requestHeaders } from "../lib/request.mjs";

export default function get(input) {
  const url = checkUrl(input.url);
  return exchange(url, {
    method: "GET",
    headers: requestHeaders(input.headers ?? {}),
    timeoutMs: input.timeoutMs,
    maxBytes: input.maxBytes,
    responseType: input.responseType,
  });
}
