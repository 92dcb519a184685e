// Drives @splice/files' checkPath (the module path is argv[2]) for one JSON request per line.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const { checkPath } = await import(pathToFileURL(process.argv[2]).href);
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const { path, allowRoot } = JSON.parse(line);
  let answer;
  try {
    answer = { ok: true, segments: checkPath(path, { allowRoot }) };
  } catch (error) {
    answer = { ok: false, name: error?.constructor?.name ?? typeof error, message: String(error?.message ?? error) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
