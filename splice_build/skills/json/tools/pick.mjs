/** json.pick: values out of a JSON value by path; missing paths are listed, not errors. */
import { parsePickPath } from "../lib/pick_path.mjs";

/** One step down, own properties only: keys index plain objects, numbers index arrays. */
function step(current, segment) {
  if (typeof segment === "number") {
    return Array.isArray(current) && segment < current.length ? { found: true, value: current[segment] } : { found: false };
  }
  const isObject = current !== null && typeof current === "object" && !Array.isArray(current);
  return isObject && Object.hasOwn(current, segment) ? { found: true, value: current[segment] } : { found: false };
}

export default function pick(input) {
  const parsed = input.paths.map((path) => [path, parsePickPath(path)]);
  const results = [];
  const missing = [];
  for (const [path, segments] of parsed) {
    let current = { found: true, value: input.value };
    for (const segment of segments) {
      current = step(current.value, segment);
      if (!current.found) break;
    }
    if (current.found) results.push({ path, found: true, value: current.value });
    else {
      results.push({ path, found: false });
      missing.push(path);
    }
  }
  return { results, missing };
}
