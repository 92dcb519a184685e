/** github.list-repos: public repositories of a user or organization, GET /users/{owner}/repos. */
import { githubGet, hasNextPage } from "../lib/github.mjs";
import { checkOwner, toRepositories } from "../lib/repository.mjs";

export default async function listRepos(input) {
  const owner = checkOwner(input.owner);
  const page = input.page ?? 1;
  const perPage = input.perPage ?? 20;
  const query = { type: input.type ?? "owner", sort: input.sort ?? "updated", per_page: perPage, page };
  const { data, headers, rateLimit } = await githubGet(
    `/users/${encodeURIComponent(owner)}/repos`, query, `user or organization ${owner}`,
  );
  return { owner, page, perPage, repositories: toRepositories(data), hasMore: hasNextPage(headers), rateLimit };
}
