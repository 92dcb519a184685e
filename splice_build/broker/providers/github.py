"""GitHub (api.github.com) and raw files (raw.githubusercontent.com), read-only.

``GITHUB_TOKEN`` is optional and is sent only to api.github.com (the raw client is built
without a key). ``github.raw`` URLs are validated before anything is sent: https, exactly
raw.githubusercontent.com, no port, credentials, query, fragment or traversal.

The capabilities are about *public* repositories (``schemas/capabilities.json``), but with a
token GitHub also answers with the private ones that token can see (a search for
``is:private`` lists them). So a search always asks for ``is:public`` (its ``totalCount``
counts no private repository), and only a repository GitHub marks ``"private": false`` is
ever passed on (fail closed: a missing field is not public); another one is left out of the
search results, and ``github.repository`` answers exactly what a repository that does not
exist answers (the same 404 failure): a different message told a tool which private names
the token can see.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from splice_build.broker.providers.answer_reader import Answer
from splice_build.broker.providers.interface import ProviderContext, ProviderData, ProviderFailure
from splice_build.errors import ErrorCode
from splice_build.spec.number_text import whole_number

API_HOST = "api.github.com"
RAW_HOST = "raw.githubusercontent.com"
DEFAULT_RAW_BYTES = 1024 * 1024
RAW_TEMPLATE = "/{owner}/{repo}/{ref}/{path}"
_RAW_PATH = re.compile(r"/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_./%@+=-]+")
_HEADERS = {"accept": "application/vnd.github+json", "x-github-api-version": "2022-11-28"}


def raw_url_problem(url: str) -> str | None:
    """Why ``url`` is not an acceptable raw-file URL, or None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "url: is not a valid URL"
    if parts.scheme != "https":
        return "url: must use https"
    if parts.netloc != RAW_HOST or port is not None or parts.username or parts.password:
        return f"url: host must be exactly {RAW_HOST} (no port or credentials)"
    if parts.query or parts.fragment or "?" in url or "#" in url:
        return "url: must not have a query or fragment"
    decoded = unquote(parts.path)
    if "\\" in decoded or "//" in decoded or any(s in (".", "..") for s in decoded.split("/")):
        return "url: must not contain traversal (., .., // or backslashes)"
    if not _RAW_PATH.fullmatch(parts.path):
        return "url: must be /<owner>/<repo>/<ref>/<path>"
    return None


def _rate_limit(headers: Mapping[str, str]) -> dict[str, Any] | None:
    if "x-ratelimit-limit" not in headers:
        return None

    def number(name: str) -> int | None:
        """ASCII digits only, at most 15 of them: ``str.isdigit()`` also takes ``²``, which
        ``int()`` refuses, and a remote header of thousands of digits is no count."""
        value = headers.get(name, "")
        return whole_number(value, 15)

    return {
        "limit": number("x-ratelimit-limit"),
        "remaining": number("x-ratelimit-remaining"),
        "reset": number("x-ratelimit-reset"),
    }


def _public(item: Answer) -> bool:
    """Whether GitHub marks ``item`` ``"private": false`` (anything else is not public)."""
    return item.field("private").value is False


def _repository(item: Answer) -> dict[str, Any]:
    topics = [topic.text() for topic in item.field("topics").items()]
    return {
        "fullName": item.field("full_name").text(),
        "name": item.field("name").text(),
        "owner": item.field("owner").field("login").text(),
        "description": item.field("description").text(),
        "url": item.field("html_url").text(),
        "homepage": item.field("homepage").text() or None,
        "defaultBranch": item.field("default_branch").text(),
        "language": item.field("language").text(),
        "license": item.field("license").field("spdx_id").text(),
        "topics": [topic for topic in topics if topic is not None],
        "stars": item.field("stargazers_count").number(),
        "forks": item.field("forks_count").number(),
        "openIssues": item.field("open_issues_count").number(),
        "archived": item.field("archived").flag(),
        "fork": item.field("fork").flag(),
        "createdAt": item.field("created_at").text(),
        "updatedAt": item.field("updated_at").text(),
        "pushedAt": item.field("pushed_at").text(),
    }


class GitHub:
    name = "github"
    title = "GitHub"
    hosts = (API_HOST, RAW_HOST)
    key_variable = "GITHUB_TOKEN"
    key_required = False
    key_is_endpoint = False
    key_hosts = (API_HOST,)
    capabilities = frozenset({"github.repository", "github.search", "github.raw"})

    def call(self, capability: str, args: Mapping[str, Any], ctx: ProviderContext) -> ProviderData:
        if capability == "github.raw":
            return self._raw(args, ctx)
        http = ctx.client(API_HOST)
        headers = dict(_HEADERS)
        if http.key:
            headers["authorization"] = f"Bearer {http.key}"
        if capability == "github.repository":
            owner, repo = str(args["repo"]).split("/", 1)
            template = "/repos/{owner}/{repo}"
            payload, response = http.request_json(
                "GET", template, path_params={"owner": owner, "repo": repo}, headers=headers
            )
            if not _public(payload.as_object()):  # answered as GitHub answers a missing one
                raise http.not_found("GET", template)
            data: dict[str, Any] = {"repository": _repository(payload)}
        else:
            template = "/search/repositories"
            page, per_page = args.get("page", 1), args.get("perPage", 10)
            # "is:public" in the query itself: GitHub then neither lists nor counts the
            # private repositories the token can see (a count of "is:private <name>" told
            # which private names exist); the filter below stays as a second wall. It goes
            # first, and the tool's quotes are closed: a qualifier after a quote the tool
            # left open would be words of that quoted phrase, not a qualifier.
            query = f"is:public {_quotes_closed(args['query'])}"
            params = {"q": query, "page": page, "per_page": per_page}
            payload, response = http.request_json("GET", template, params=params, headers=headers)
            payload = payload.as_object()
            data = {
                "query": args["query"],
                "totalCount": payload.field("total_count").number(),
                "incompleteResults": payload.field("incomplete_results").flag(),
                "page": page,
                "perPage": per_page,
                "repositories": [
                    _repository(item) for item in payload.field("items").objects() if _public(item)
                ],
            }
        return ProviderData(data, f"GET {template}", rate_limit=_rate_limit(response.headers))

    @staticmethod
    def _raw(args: Mapping[str, Any], ctx: ProviderContext) -> ProviderData:
        url = str(args["url"])
        problem = raw_url_problem(url)
        if problem:
            raise ProviderFailure(problem, code=ErrorCode.INVALID_INPUT)
        limit = int(args.get("maxBytes", DEFAULT_RAW_BYTES))
        response = ctx.client(RAW_HOST).request_path(
            "GET", urlsplit(url).path, shown_as=RAW_TEMPLATE, max_bytes=limit
        )
        body = response.body
        try:
            content: dict[str, Any] = {"encoding": "utf8", "text": body.decode("utf-8")}
        except UnicodeDecodeError:
            content = {"encoding": "base64", "base64": base64.b64encode(body).decode("ascii")}
        return ProviderData({"url": url, "bytes": len(body), **content}, f"GET {RAW_TEMPLATE}")


PROVIDER = GitHub()


def _quotes_closed(query: str) -> str:
    """``query`` with a closing ``"`` added when it leaves a quoted phrase open."""
    return query + '"' if query.count('"') % 2 else query
