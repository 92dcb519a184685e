/** market.price: the host capability market.price, its result returned unchanged. */
import { callCapability } from "../lib/broker.mjs";

/** Input field → capability argument (only defined fields are sent). */
const ARGS = Object.freeze({ token: "token", network: "network", vs: "vs" });

export default function price(input, ctx) {
  return callCapability(ctx, "market.price", input, ARGS);
}
