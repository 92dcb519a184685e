/** market.candles: the host capability market.ohlcv, its result returned unchanged. */
import { callCapability } from "../lib/broker.mjs";

/** Input field → capability argument (only defined fields are sent). */
const ARGS = Object.freeze({ network: "network", pool: "pool", timeframe: "timeframe", aggregate: "aggregate", limit: "limit" });

export default function candles(input, ctx) {
  return callCapability(ctx, "market.ohlcv", input, ARGS);
}
