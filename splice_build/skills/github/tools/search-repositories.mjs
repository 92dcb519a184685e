/** github.search-repositories: GitHub repository search, GET /search/repositories. */
import { fail } from "../lib/fail.mjs";
import { githubGet } from "../lib/github.mjs";
import { toRepositories } from "../lib/repository.mjs";

export default async function searchRepositories(input) {
  if (input.query.trim() === "") throw fail("INVALID_INPUT", "query is blank");
  const page = input.page ?? 1;
  const perPage = input.perPage ?? 10;
  const sort = input.sort ?? "best-match";
  // GitHub's default order is best match; `order` only applies to an explicit sort.
  const query = sort === "best-match"
    ? { q: input.query, per_page: perPage, page }
    : { q: input.query, sort, order: input.order ?? "desc", per_page: perPage, page };
  const { data, rateLimit } = await githubGet("/search/repositories", query, "search endpoint");
  if (data === null || typeof data !== "object" || !Number.isInteger(data.total_count)) {
    throw fail("GITHUB_ERROR", "GitHub sent search results in an unexpected shape");
  }
  return {
    query: input.query,
    totalCount: data.total_count,
    incompleteResults: data.incomplete_results === true,
    page,
    perPage,
    repositories: toRepositories(data.items),
    rateLimit,
  };
}
