/** example.hello: greet someone by (trimmed) name. */
export default function hello(input) {
  const name = String(input.name).trim();
  return { message: `Hello, ${name}${input.excited ? '!' : '.'}` };
}
