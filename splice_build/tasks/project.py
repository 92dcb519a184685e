"""One project's graph with a registry session of its own.

What ``Splice.add/install/update`` (the SDK, and through it the CLI and MCP) and the
``splice:install`` doit task run; ``sync.sync_workspace`` does the same for many projects.
It lives here, below the SDK, so that the doit entry point never imports the SDK.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from splice_build.tasks.graph import run_graph

if TYPE_CHECKING:
    from splice_build.install.installer import InstallOptions
    from splice_build.project.home import SpliceHome
    from splice_build.project.layout import ProjectLayout
    from splice_build.project.project_file import ProjectFile
    from splice_build.tasks.request import GraphRequest, GraphRun

Progress = Callable[[str, str], None]  # (step, message)


def _quiet(step: str, message: str) -> None:
    return None


def run_project(
    layout: ProjectLayout,
    request: GraphRequest,
    *,
    registry_url: str,
    home: SpliceHome,
    env: Mapping[str, str],
    options: InstallOptions,
    on_progress: Progress = _quiet,
    on_blocked: Callable[[], None] | None = None,
    flag: str | None = None,
) -> GraphRun:
    """Run the project's graph against ``registry_url`` (and the registry a ``Resolve`` of
    the request names, for its package, or a locked package's own registry when neither
    ``flag`` (``--registry``), ``SPLICE_REGISTRY`` nor splice.json names one); raises its
    first ``SpliceError``."""
    from splice_build.install.cache import ArtifactCache
    from splice_build.install.installer import Installer
    from splice_build.install.session import RegistrySession, RegistrySessions
    from splice_build.project.registry_url import lock_decides as registry_url_lock_decides

    session = RegistrySession(registry_url, home=home, env=env)
    others = RegistrySessions(home=home, env=env)  # the registries a ``Resolve`` names
    try:
        cache = ArtifactCache(home.check().artifacts_dir)

        def lock_decides(project: ProjectFile) -> bool:
            return registry_url_lock_decides(flag=flag, env=env, project=project)

        installer = Installer(layout, cache, session, options, on_progress, others, lock_decides)
        return run_graph(layout, installer, request, on_blocked=on_blocked).run
    finally:
        others.close()
        session.close()
