/**
 * The one way this skill reaches the host: ctx.capability(name, args). The host broker checks
 * the declaration, validates the arguments and runs the provider with the host's keys; the
 * result ({ status: LIVE | CACHED | UNAVAILABLE | ERROR, ... }) is returned unchanged.
 */
export function callCapability(ctx, name, input, fields) {
  if (typeof ctx?.capability !== "function") {
    throw new Error("CAPABILITY_UNAVAILABLE: this runtime offers no ctx.capability");
  }
  const args = {};
  for (const [field, argument] of Object.entries(fields)) {
    if (input[field] !== undefined) args[argument] = input[field];
  }
  return ctx.capability(name, args);
}
