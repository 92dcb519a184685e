/**
 * GitHub repository objects → the skill's compact, stable shape, and the input checks for the
 * names that go into API paths.
 */
import { fail } from "./fail.mjs";

// GitHub logins: letters, digits and hyphens, not starting with a hyphen (schema: 1..39).
const OWNER = /^[A-Za-z0-9][A-Za-z0-9-]*$/;
// Repository names: letters, digits, '.', '-' and '_' (schema: 1..100); '.' and '..' are not names.
const REPO = /^[A-Za-z0-9._-]+$/;

export function checkOwner(owner) {
  if (!OWNER.test(owner)) {
    throw fail("INVALID_INPUT", `owner ${JSON.stringify(owner)} is not a GitHub user or organization name`);
  }
  return owner;
}

export function checkRepo(repo) {
  if (!REPO.test(repo) || repo === "." || repo === "..") {
    throw fail("INVALID_INPUT", `repo ${JSON.stringify(repo)} is not a GitHub repository name`);
  }
  return repo;
}

function text(value) {
  return typeof value === "string" && value !== "" ? value : null;
}

function count(value) {
  return Number.isInteger(value) && value >= 0 ? value : 0;
}

export function toRepository(raw) {
  if (raw === null || typeof raw !== "object" || typeof raw.full_name !== "string") {
    throw fail("GITHUB_ERROR", "GitHub sent a repository in an unexpected shape");
  }
  return {
    fullName: raw.full_name,
    name: String(raw.name ?? ""),
    owner: String(raw.owner?.login ?? ""),
    description: text(raw.description),
    url: String(raw.html_url ?? ""),
    homepage: text(raw.homepage),
    defaultBranch: String(raw.default_branch ?? ""),
    language: text(raw.language),
    license: text(raw.license?.spdx_id),
    topics: Array.isArray(raw.topics) ? raw.topics.filter((t) => typeof t === "string") : [],
    stars: count(raw.stargazers_count),
    forks: count(raw.forks_count),
    openIssues: count(raw.open_issues_count),
    archived: raw.archived === true,
    fork: raw.fork === true,
    createdAt: String(raw.created_at ?? ""),
    updatedAt: String(raw.updated_at ?? ""),
    pushedAt: text(raw.pushed_at),
  };
}

/** An array of repositories, or GITHUB_ERROR when GitHub sent something else. */
export function toRepositories(list) {
  if (!Array.isArray(list)) throw fail("GITHUB_ERROR", "GitHub sent a repository list in an unexpected shape");
  return list.map(toRepository);
}
