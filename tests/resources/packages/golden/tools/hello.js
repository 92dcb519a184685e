import { greeting } from "../lib/greeting.js";

export default function hello(input) {
  return { message: greeting(input.name) };
}
