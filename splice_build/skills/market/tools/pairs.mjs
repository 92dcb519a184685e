/** market.pairs: the host capability market.pairs, its result returned unchanged. */
import { callCapability } from "../lib/broker.mjs";

/** Input field → capability argument (only defined fields are sent). */
const ARGS = Object.freeze({ network: "network", token: "address" });

export default function pairs(input, ctx) {
  return callCapability(ctx, "market.pairs", input, ARGS);
}
