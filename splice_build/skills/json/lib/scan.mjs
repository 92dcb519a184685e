/**
 * A JSON syntax checker that says *where* a text stops being JSON, and refuses nesting deeper than
 * a limit before anything is built. JSON.parse only says that it failed (its messages differ
 * between Node versions); this scanner follows RFC 8259 exactly as JSON.parse does, iteratively,
 * so a deep document cannot overflow the stack.
 */

const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);
const SIMPLE_ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);
const HEX4 = /^[0-9a-fA-F]{4}$/;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const CLOSER = Object.freeze({ "{": "}", "[": "]" });

/**
 * Returns null when `text` is one valid JSON value nested at most `maxDepth` levels,
 * `{ tooDeep: true }` when it opens more than `maxDepth` containers before any syntax error,
 * or `{ offset }`: the UTF-16 index of the first offending character (text.length when the text
 * ends too early).
 */
export function scanJson(text, maxDepth) {
  const end = text.length;
  const stack = [];
  let i = 0;
  let expect = "value"; // "value" | "key" | "after"

  const skipWhitespace = () => {
    while (i < end && WHITESPACE.has(text.charCodeAt(i))) i++;
  };
  const string = () => {
    i++; // opening quote
    while (i < end) {
      const c = text[i];
      if (c === '"') {
        i++;
        return true;
      }
      if (text.charCodeAt(i) < 0x20) return false;
      if (c === "\\") {
        const e = text[i + 1];
        if (e === "u" && HEX4.test(text.slice(i + 2, i + 6))) i += 6;
        else if (e !== undefined && SIMPLE_ESCAPES.has(e)) i += 2;
        else return false;
      } else i++;
    }
    return false;
  };
  const scalar = () => {
    const c = text[i];
    if (c === '"') return string();
    for (const word of ["true", "false", "null"]) {
      if (c === word[0]) {
        for (let k = 0; k < word.length; k++, i++) if (text[i] !== word[k]) return false;
        return true;
      }
    }
    NUMBER.lastIndex = i;
    const match = NUMBER.exec(text);
    if (!match) return false;
    i += match[0].length;
    return true;
  };

  for (;;) {
    skipWhitespace();
    if (expect === "value") {
      const c = text[i];
      if (c === "{" || c === "[") {
        if (stack.length === maxDepth) return { tooDeep: true };
        stack.push(c);
        i++;
        skipWhitespace();
        if (text[i] === CLOSER[c]) {
          stack.pop();
          i++;
          expect = "after";
        } else expect = c === "{" ? "key" : "value";
        continue;
      }
      if (!scalar()) return { offset: Math.min(i, end) };
      expect = "after";
    } else if (expect === "key") {
      if (text[i] !== '"' || !string()) return { offset: Math.min(i, end) };
      skipWhitespace();
      if (text[i] !== ":") return { offset: Math.min(i, end) };
      i++;
      expect = "value";
    } else {
      const top = stack.at(-1);
      if (top === undefined) return i === end ? null : { offset: i };
      if (text[i] === ",") {
        i++;
        expect = top === "{" ? "key" : "value";
      } else if (text[i] === CLOSER[top]) {
        stack.pop();
        i++;
      } else return { offset: Math.min(i, end) };
    }
  }
}

/** "at position P (line L, column C)" or "unexpected end of input (line L, column C)"; 1-based. */
export function describeOffset(text, offset) {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = offset - before.lastIndexOf("\n");
  const where = `(line ${line}, column ${column})`;
  return offset >= text.length ? `unexpected end of input ${where}` : `at position ${offset} ${where}`;
}
