/** example.stats: characters, words, lines and the longest word of a text. */
export default function stats(input) {
  const text = String(input.text);
  const words = text.split(/\s+/u).filter((word) => word.length > 0);
  let longestWord = '';
  for (const word of words) {
    if ([...word].length > [...longestWord].length) longestWord = word;
  }
  const newlines = (text.match(/\n/gu) || []).length;
  const lines = text.length === 0 ? 0 : newlines + (text.endsWith('\n') ? 0 : 1);
  return { characters: [...text].length, words: words.length, lines, longestWord };
}
