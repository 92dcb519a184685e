/** web.answer: the host capability web.answer, its result returned unchanged. */
import { callCapability } from "../lib/broker.mjs";

/** Input field → capability argument (only defined fields are sent). */
const ARGS = Object.freeze({ question: "query" });

export default function answer(input, ctx) {
  return callCapability(ctx, "web.answer", input, ARGS);
}
