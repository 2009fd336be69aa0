"""A Harbor environment for machines without a container daemon: each trial gets a private
root directory, and each command runs chrooted into it inside fresh mount and PID namespaces
(`unshare`), with the host's `/usr` and `/etc` bind-mounted read-only (`/bin`, `/lib`, `/lib64`,
`/sbin` are links into `/usr`, as on merged-usr systems), a private `/proc`, the host's `/dev`,
and writable `/tmp`, `/root`, `/logs` and the task's working directory (`[environment] workdir`,
default `/app`). `-e paddock_harbor.chroot:ChrootEnvironment`.

It is for tests, not isolation. What it does not do:
- the task's `environment/` Dockerfile is not built: the trial runs on the host's programs; only
  its plain `COPY SOURCE... DEST` lines are carried out, so the files a task ships are where its
  instruction says (no `ADD`, no `--from`, no globs);
- the network is the host's (the agent reaches a model server on 127.0.0.1), and no CPU,
  memory or disk limit applies;
- run as root, a command is root in the host's user namespace (a chroot is escapable by root);
  run unprivileged, it is root of a new user namespace (`unshare --user --map-root-user`), which
  needs unprivileged user namespaces, and a command cannot run as another user;
- a file uploaded or written keeps the host's ownership; `/dev` is the host's; uploads and
  downloads resolve paths on the host, where a link inside the root points at the host's files.
"""

import asyncio
import os
import shlex
import shutil
import tempfile
from pathlib import Path

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

READ_ONLY = ("usr", "etc")
LINKS = {"bin": "usr/bin", "lib": "usr/lib", "lib64": "usr/lib64", "sbin": "usr/sbin"}
WRITABLE = ("tmp", "root", "logs/agent", "logs/verifier", "logs/artifacts")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ChrootEnvironment(BaseEnvironment):
    # Made by `start()`; until then the trial has no files (Harbor still asks for its logs
    # when a trial fails before its environment started).
    _root: Path | None = None

    @staticmethod
    def type() -> str:
        return "chroot"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities()

    def _validate_definition(self):
        if shutil.which("unshare") is None or shutil.which("chroot") is None:
            raise RuntimeError(
                "ChrootEnvironment needs `unshare` and `chroot` (util-linux, coreutils)"
            )

    @property
    def _workdir(self) -> str:
        return self.task_env_config.workdir or "/app"

    async def start(self, force_build: bool) -> None:
        self._root = Path(tempfile.mkdtemp(prefix="harbor-chroot-"))
        for name in (*READ_ONLY, "proc", "dev", *WRITABLE, self._workdir.lstrip("/")):
            (self._root / name).mkdir(parents=True, exist_ok=True)
        os.chmod(self._root / "tmp", 0o1777)
        for name, target in LINKS.items():
            (self._root / name).symlink_to(target)
        self._copy_task_files()

    def _copy_task_files(self) -> None:
        """The Dockerfile's plain `COPY SOURCE... DEST` lines, from the task's `environment/`."""
        context = Path(self.environment_dir)
        dockerfile = context / "Dockerfile"
        if not dockerfile.is_file():
            return
        workdir = "/"
        for line in dockerfile.read_text().splitlines():
            words = shlex.split(line, comments=True)
            if len(words) >= 2 and words[0].upper() == "WORKDIR":
                workdir = os.path.join(workdir, words[1])
            if len(words) < 3 or words[0].upper() != "COPY" or words[1].startswith("--"):
                continue
            *sources, dest = words[1:]
            dest = os.path.join(workdir, dest)
            for source in sources:
                origin = (context / source).resolve()
                if not origin.is_relative_to(context.resolve()) or not origin.exists():
                    continue
                target = self._on_host(
                    os.path.join(dest, origin.name)
                    if dest.endswith("/") or len(sources) > 1
                    else dest
                )
                target.parent.mkdir(parents=True, exist_ok=True)
                if origin.is_dir():
                    shutil.copytree(origin, target, dirs_exist_ok=True)
                else:
                    shutil.copy2(origin, target)

    async def stop(self, delete: bool):
        if delete and self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)

    def _on_host(self, path: str) -> Path:
        if self._root is None:
            raise RuntimeError(
                f"the chroot environment was never started, so it has no {path}: "
                "start() makes its root"
            )
        # Lexically inside the root: `..` at the top stays at the top.
        return self._root / os.path.normpath("/" + str(path)).lstrip("/")

    async def upload_file(self, source_path, target_path: str):
        target = self._on_host(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source_path, target)

    async def upload_dir(self, source_dir, target_dir: str):
        shutil.copytree(source_dir, self._on_host(target_dir), symlinks=True, dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path):
        if self._root is None:
            self.logger.debug(f"not started: no {source_path} to download")
            return
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self._on_host(source_path), target_path)

    async def download_dir(self, source_dir: str, target_dir):
        if self._root is None:
            # A trial that failed before its environment started has no logs to fetch.
            self.logger.debug(f"not started: no {source_dir} to download")
            return
        shutil.copytree(self._on_host(source_dir), target_dir, symlinks=True, dirs_exist_ok=True)

    async def exec(self, command, cwd=None, env=None, timeout_sec=None, user=None) -> ExecResult:
        root = shlex.quote(str(self._on_host("/")))
        mounts = [
            f"mount --rbind /{d} {root}/{d} && mount -o remount,bind,ro {root}/{d}"
            for d in READ_ONLY
        ] + [f"mount --rbind /dev {root}/dev", f"mount -t proc proc {root}/proc"]
        user = self._resolve_user(user)
        as_user = f"--userspec={shlex.quote(str(user))} " if user not in (None, "root", 0) else ""
        variables = {"PATH": PATH, "HOME": "/root", **(self._merge_env(env) or {})}
        inner = f"cd {shlex.quote(cwd or self._workdir)} && {command}"
        script = " && ".join(mounts) + (
            f" && exec chroot {as_user}{root} /usr/bin/env -i "
            + " ".join(shlex.quote(f"{k}={v}") for k, v in variables.items())
            + f" /bin/bash -c {shlex.quote(inner)}"
        )
        unshare = ["unshare", "--mount", "--pid", "--fork", "--kill-child"]
        unshare += ["--propagation", "private"]
        if os.geteuid() != 0:
            unshare += ["--user", "--map-root-user"]
        process = await asyncio.create_subprocess_exec(
            *unshare, "/bin/sh", "-c", script,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout=timeout_sec)
        except (asyncio.TimeoutError, asyncio.CancelledError) as stopped:
            # `--kill-child`: the command's whole PID namespace goes with `unshare`.
            process.kill()
            await process.wait()
            if isinstance(stopped, asyncio.CancelledError):
                raise
            return ExecResult(stderr=f"timed out after {timeout_sec} s", return_code=124)
        return ExecResult(
            stdout=out.decode(errors="replace"),
            stderr=err.decode(errors="replace"),
            return_code=process.returncode,
        )
