/** onchain.balance: the host capability onchain.balance, its result returned unchanged. */
import { callCapability } from "../lib/broker.mjs";

/** Input field → capability argument (only defined fields are sent). */
const ARGS = Object.freeze({ address: "address" });

export default function balance(input, ctx) {
  return callCapability(ctx, "onchain.balance", input, ARGS);
}
