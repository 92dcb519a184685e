/** web.search: the host capability web.search, its result returned unchanged. */
import { callCapability } from "../lib/broker.mjs";

/** Input field → capability argument (only defined fields are sent). */
const ARGS = Object.freeze({ query: "query", limit: "limit", content: "content", maxCharacters: "maxCharacters", includeDomains: "includeDomains", excludeDomains: "excludeDomains" });

export default function search(input, ctx) {
  return callCapability(ctx, "web.search", input, ARGS);
}
