/** onchain.transaction: the host capability onchain.transaction, its result returned unchanged. */
import { callCapability } from "../lib/broker.mjs";

/** Input field → capability argument (only defined fields are sent). */
const ARGS = Object.freeze({ hash: "hash" });

export default function transaction(input, ctx) {
  return callCapability(ctx, "onchain.transaction", input, ARGS);
}
