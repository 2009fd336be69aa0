"""paddock as a Harbor installed agent.

`install()` uploads a paddock binary into the trial's environment; `run()` runs the task's
instruction there with `paddock run --json`, headless (`--on-ask allow`: the environment is the
outer boundary, paddock's own sandbox stays on), writing the event stream (`paddock.jsonl`),
standard error (`paddock.stderr`), the ATIF trajectory (`trajectory.json`) and the session's log
(`sessions/`) to the agent logs directory, and raising `NonZeroAgentExitCodeError` unless the run
completed or a budget stopped it (exit 0 or 3); `populate_context_post_run()` fills Harbor's token
counts and cost from the stream's `result` line (docs/json-events.md).

Options (`--ak key=value`): `binary` (the paddock binary to upload; else `$PADDOCK_BINARY`),
`preset` (a shipped preset's name, or a `.toml` file on this machine, uploaded; default
`container.toml` beside this file: the task's container is the outer boundary, so programs run
with `confine = "off"`, which a preset relying on paddock's jail would refuse to start without
where the container forbids user namespaces; `paddock doctor` says which layers hold), `provider` (`openai` or `anthropic`, the wire format of the model's server),
`max_turns`. The model is `-m NAME`, sent as written; the server is `$PADDOCK_BASE_URL` and its
key `$PADDOCK_API_KEY`, taken from `--ae` or from Harbor's own environment.
"""

import json
import os
import shlex
from pathlib import Path

from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import (
    BaseInstalledAgent,
    NonZeroAgentExitCodeError,
    with_prompt_template,
)
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

BINARY = "/installed-agent/paddock"
UPLOADED_PRESET = "/installed-agent/preset.toml"
HOME = "/installed-agent/home"

# Exit codes of a run that ended as paddock meant it to: completed, or stopped by a budget.
FINISHED = {0, 3}

# Read by `paddock run` itself; passed on from Harbor's environment when set there.
FORWARDED = ("PADDOCK_BASE_URL", "PADDOCK_API_KEY")


class PaddockAgent(BaseInstalledAgent):
    capabilities = AgentCapabilities(atif=True)

    def __init__(
        self,
        *args,
        binary: str | None = None,
        preset: str = str(Path(__file__).with_name("container.toml")),
        provider: str | None = None,
        max_turns: int | str | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self._binary = binary or os.environ.get("PADDOCK_BINARY")
        self._preset = preset
        self._provider = provider
        self._max_turns = int(max_turns) if max_turns is not None else None

    @staticmethod
    def name() -> str:
        return "paddock"

    def get_version_command(self) -> str | None:
        return f"{BINARY} --version"

    def parse_version(self, stdout: str) -> str:
        # `paddock 0.1.0`
        return stdout.strip().split()[-1]

    async def install(self, environment: BaseEnvironment) -> None:
        if not self._binary or not Path(self._binary).is_file():
            raise FileNotFoundError(
                f"PaddockAgent needs a paddock binary to upload, got {self._binary!r}: pass "
                "--ak binary=PATH or set PADDOCK_BINARY (the image must be able to run it: "
                "a static build runs in any Linux image)"
            )
        await environment.upload_file(self._binary, BINARY)
        if self._preset.endswith(".toml"):
            await environment.upload_file(self._preset, UPLOADED_PRESET)
        setup = f"chmod 755 {BINARY} && mkdir -p {HOME}"
        if environment.default_user is not None:
            # The task's agent user runs paddock, whose data directory this is.
            setup += f" && chown {shlex.quote(str(environment.default_user))} {HOME}"
        await self.exec_as_root(environment, setup)

    @with_prompt_template
    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        logs = self.environment_logs_dir
        preset = UPLOADED_PRESET if self._preset.endswith(".toml") else self._preset
        args = [BINARY, "run", "--json", "--preset", preset, "--on-ask", "allow"]
        args += ["--atif", str(logs / "trajectory.json")]
        if self.model_name:
            args += ["--model", self.model_name]
        if self._provider:
            args += ["--provider", self._provider]
        if self._max_turns is not None:
            args += ["--max-turns", str(self._max_turns)]
        args += ["--", instruction]
        stream, stderr = logs / "paddock.jsonl", logs / "paddock.stderr"
        # The exit code is paddock's; the output is the stream's last line, its `result`. The
        # session's log goes beside the stream (the data directory also holds compiled code).
        command = (
            f"{shlex.join(args)} > {stream} 2> {stderr}; code=$?; "
            f"cp -r {HOME}/sessions {logs}/ 2>/dev/null; tail -n 1 {stream}; exit $code"
        )
        env = {"PADDOCK_HOME": HOME}
        for name in FORWARDED:
            value = self._get_env(name)
            if value:
                env[name] = value
        # Not `exec_as_agent`: it raises on every non-zero exit, and a budget stop is a run.
        ran = await environment.exec(command, env=env)
        if ran.return_code not in FINISHED:
            raise NonZeroAgentExitCodeError(
                f"paddock exited {ran.return_code}: "
                f"{(ran.stdout or '').strip() or 'no result line'} "
                "(the agent logs hold paddock.jsonl and paddock.stderr)"
            )

    def populate_context_post_run(self, context: AgentContext) -> None:
        result = last_result(self.logs_dir / "paddock.jsonl")
        if result is None:
            return
        context.n_input_tokens = result["input_tokens"]
        context.n_cache_tokens = result["cache_read_tokens"]
        context.n_output_tokens = result["tokens"] - result["input_tokens"]
        context.cost_usd = result["cost_usd"]
        context.metadata = {
            key: result.get(key)
            for key in (
                "session", "stop_reason", "exit_code", "denied_calls", "cache_write_tokens"
            )
        }


def last_result(stream: Path) -> dict | None:
    """The `data` of the `result` line that ends a `paddock run --json` stream, if it has one."""
    try:
        lines = stream.read_text().splitlines()
    except FileNotFoundError:
        return None
    for line in reversed(lines):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and event.get("type") == "result":
            return event["data"]
    return None
