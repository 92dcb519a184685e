/** json.parse: JSON text → value, with the position of the first syntax error. */
import { fail } from "../lib/fail.mjs";
import { describeOffset, scanJson } from "../lib/scan.mjs";

/** Deeper documents are refused; the runtime limits tool input and output to the same depth. */
export const MAX_DEPTH = 256;

function typeOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

export default function parse(input) {
  const { text } = input;
  const problem = scanJson(text, MAX_DEPTH);
  if (problem?.tooDeep) throw fail("INVALID_JSON", `nested deeper than ${MAX_DEPTH} levels`);
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const offset = problem ? problem.offset : text.length;
    throw fail("INVALID_JSON", `${describeOffset(text, offset)}: ${error.message}`);
  }
  return { value, type: typeOf(value) };
}
