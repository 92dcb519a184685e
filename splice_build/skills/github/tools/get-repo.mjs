/** github.get-repo: one public repository, GET /repos/{owner}/{repo}. */
import { githubGet } from "../lib/github.mjs";
import { checkOwner, checkRepo, toRepository } from "../lib/repository.mjs";

export default async function getRepo(input) {
  const owner = checkOwner(input.owner);
  const repo = checkRepo(input.repo);
  const path = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`;
  const { data, rateLimit } = await githubGet(path, {}, `repository ${owner}/${repo}`);
  return { repository: toRepository(data), rateLimit };
}
