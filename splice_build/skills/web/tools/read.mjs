/** web.read: the host capability web.extract, its result returned unchanged. */
import { callCapability } from "../lib/broker.mjs";

/** Input field → capability argument (only defined fields are sent). */
const ARGS = Object.freeze({ urls: "urls", maxCharacters: "maxCharacters" });

export default function read(input, ctx) {
  return callCapability(ctx, "web.extract", input, ARGS);
}
