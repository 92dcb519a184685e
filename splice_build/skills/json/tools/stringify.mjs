/** json.stringify: value → JSON text (optionally indented, optionally with keys sorted). */

/** Object keys sorted recursively by UTF-16 code units (JavaScript's default sort); arrays keep order. */
function sortKeysDeep(value) {
  if (Array.isArray(value)) return value.map(sortKeysDeep);
  if (value === null || typeof value !== "object") return value;
  const sorted = {};
  for (const key of Object.keys(value).sort()) {
    // defineProperty keeps a "__proto__" key an ordinary property instead of setting the prototype.
    Object.defineProperty(sorted, key, {
      value: sortKeysDeep(value[key]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return sorted;
}

export default function stringify(input) {
  const value = input.sortKeys ? sortKeysDeep(input.value) : input.value;
  const text = JSON.stringify(value, null, input.indent ?? 0);
  return { text, bytes: Buffer.byteLength(text, "utf8") };
}
