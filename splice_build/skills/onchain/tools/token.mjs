/** onchain.token: the host capability onchain.token, its result returned unchanged. */
import { callCapability } from "../lib/broker.mjs";

/** Input field → capability argument (only defined fields are sent). */
const ARGS = Object.freeze({ address: "address" });

export default function token(input, ctx) {
  return callCapability(ctx, "onchain.token", input, ARGS);
}
