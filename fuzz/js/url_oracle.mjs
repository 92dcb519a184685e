// One long-lived WHATWG URL oracle: reads one JSON string per line, answers one JSON line.
import { createInterface } from "node:readline";

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  let answer;
  try {
    const url = new URL(JSON.parse(line));
    answer = {
      ok: true,
      protocol: url.protocol,
      username: url.username,
      password: url.password,
      hostname: url.hostname,
      port: url.port,
    };
  } catch {
    answer = { ok: false };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
