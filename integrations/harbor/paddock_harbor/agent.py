"""paddock as a Harbor installed agent.

`install()` uploads a paddock binary into the trial's environment (what `skip_install` skips:
the image then provides `/installed-agent/paddock` or `paddock` on `PATH`) and installs the
plugins the `plugins` option lists into the trial's data directory, so that their compile
(seconds for a JavaScript or Python one) happens in the agent's set-up and the trial's first
call loads compiled code (with `skip_install`, `configure()` installs them); `configure()` does
each trial's set-up, with or without an install: the data directory, the preset (uploaded when
it is a file) and, when the task declares MCP servers, a preset extending it with them
(`paddock_harbor.mcp`). `run()` runs the task's instruction with `paddock run --json`, headless
(`--on-ask allow`: the environment is the outer boundary, paddock's own sandbox stays on),
writing the event stream (`paddock.jsonl`), standard error (`paddock.stderr`), the ATIF
trajectory (`trajectory.json`) and the session's log (`sessions/`) to the agent logs directory.
A run that completed or that a budget stopped (exit 0 or 3) is a finished trial; any other
raises the Harbor error its `result` line calls for (`paddock_harbor.errors`: a 429 is an
`ApiRateLimitError`, a request past the context a `ContextWindowExceededError`, ...).
`populate_context_post_run()` fills Harbor's token counts and cost from the `result` line
(docs/json-events.md).

Options (`--ak key=value`, checked against `PaddockOptions`: a misspelt one stops `harbor run`
before any trial, naming it and the valid ones). The model is `-m NAME`, sent as written. The
server is `harbor run --base-url URL`, else `$PADDOCK_BASE_URL`; its key `$PADDOCK_API_KEY`
(or the variable `--api-key-name` names); both from `--ae` or Harbor's own environment.
`--api-format anthropic_messages` selects the Anthropic wire (like `--ak provider=anthropic`).
"""

import difflib
import json
import os
import shlex
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PositiveInt

from harbor.agents.agent_auth_resolution import ModelConnectionSpec, ProviderAccess
from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
from harbor.agents.options import InstalledAgentOptions
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.model_api_format import ModelApiFormat

from paddock_harbor import mcp
from paddock_harbor.errors import error_class

AGENT_DIR = "/installed-agent"
BINARY = f"{AGENT_DIR}/paddock"
# The preset a `.toml` option is uploaded as, and the one extending it with the task's MCP
# servers (beside it: `extends` is relative to the file).
UPLOADED_PRESET = f"{AGENT_DIR}/preset.toml"
TRIAL_PRESET = f"{AGENT_DIR}/trial-preset.toml"
HOME = f"{AGENT_DIR}/home"
# Where the `plugins` option's files are uploaded before `paddock plugin install`.
PLUGINS_DIR = f"{AGENT_DIR}/plugins"
CONTAINER_PRESET = str(Path(__file__).with_name("container.toml"))

# The installed binary, else one the image has on PATH (`skip_install`).
FIND_BINARY = (
    f"p=$(command -v {BINARY} || command -v paddock) || {{ echo 'no paddock binary: "
    f"neither {BINARY} nor paddock on PATH (with skip_install the image must have one)' >&2; "
    "exit 127; }; "
)

# Exit codes of a run that ended as paddock meant it to: completed, or stopped by a budget.
FINISHED = {0, 3}

WIRE_OF_FORMAT = {
    ModelApiFormat.OPENAI_CHAT_COMPLETIONS: "openai",
    ModelApiFormat.ANTHROPIC_MESSAGES: "anthropic",
}


class PaddockOptions(InstalledAgentOptions):
    binary: str | None = Field(
        default=None,
        description="The paddock binary to upload (default $PADDOCK_BINARY); it must run in "
        "the task's image: a static build (`cargo xtask dist`) runs in any Linux image.",
    )
    preset: str = Field(
        default=CONTAINER_PRESET,
        description="A shipped preset's name, or a .toml file on this machine (uploaded). "
        "Default: container.toml beside the adapter (the container is the outer boundary).",
    )
    provider: Literal["openai", "anthropic"] | None = Field(
        default=None, description="The wire format of the model's server (default openai)."
    )
    max_turns: PositiveInt | None = Field(
        default=None, description="Stop the session after this many turns (exit 3, finished)."
    )
    plugins: str | None = Field(
        default=None,
        description="Plugins to install into the trial's data directory before the run: "
        ".wasm files on this machine, comma-separated, uploaded and installed with `paddock "
        "plugin install` under the file's name less `.wasm` (the name the preset's `source` "
        "gives), so they are compiled in the agent's set-up, not at the trial's first call.",
    )


class PaddockAgent(BaseInstalledAgent):
    capabilities = AgentCapabilities(atif=True, base_url=True, mcp_servers=True)
    options_model = PaddockOptions
    # paddock's own variables, projected from `--base-url`, `--api-key-name` or themselves.
    MODEL_CONNECTION = ModelConnectionSpec(
        agent_provider_access=ProviderAccess(
            api_key_candidate_names=["PADDOCK_API_KEY"],
            base_url_candidate_names=["PADDOCK_BASE_URL"],
        ),
        api_key_destination_names={"default": "PADDOCK_API_KEY"},
        base_url_destination_names={"default": "PADDOCK_BASE_URL"},
        supported_api_formats=list(WIRE_OF_FORMAT),
    )

    options: PaddockOptions

    @staticmethod
    def name() -> str:
        return "paddock"

    @staticmethod
    def _parse_model_name_for_connection(
        model_name: str, *, skip_model_parsing: bool = False
    ) -> tuple[str | None, str]:
        # The model is sent as written (a gateway's `anthropic/claude-...` included): no
        # provider is read from it, so no provider's key or URL is picked up behind the user.
        return None, model_name

    @classmethod
    def valid_options(cls) -> list[str]:
        """The options this agent takes: its model's fields less those Harbor would refuse
        for capabilities it lacks."""
        refused = {
            name
            for name, field in (
                ("config", "native_config"),
                ("reasoning_effort", "reasoning_effort"),
            )
            if not getattr(cls.capabilities, field)
        }
        return sorted(set(PaddockOptions.model_fields) - refused)

    @classmethod
    def parse_options(cls, kwargs: dict[str, Any] | None = None, env=None):
        try:
            return super().parse_options(kwargs, env)
        except ValueError as error:
            valid = cls.valid_options()
            hints = [
                f"  '{name}': did you mean '{close[0]}'?"
                for name in (kwargs or {})
                if name not in PaddockOptions.model_fields
                and (close := difflib.get_close_matches(name, valid, n=1))
            ]
            raise ValueError(
                "\n".join([str(error), *hints, f"Valid options: {', '.join(valid)}"])
            ) from None

    def get_version_command(self) -> str | None:
        return f'{FIND_BINARY}"$p" --version'

    def parse_version(self, stdout: str) -> str:
        # `paddock 0.1.0`
        return stdout.strip().split()[-1]

    @property
    def _binary(self) -> str | None:
        return self.options.binary or os.environ.get("PADDOCK_BINARY")

    @property
    def _uploads_preset(self) -> bool:
        return self.options.preset.endswith(".toml")

    async def install(self, environment: BaseEnvironment) -> None:
        binary = self._binary
        if not binary or not Path(binary).is_file():
            raise FileNotFoundError(
                f"PaddockAgent needs a paddock binary to upload, got {binary!r}: pass "
                "--ak binary=PATH or set PADDOCK_BINARY (the image must be able to run it: "
                "a static build runs in any Linux image), or --ak skip_install=true when the "
                "image has one"
            )
        await environment.upload_file(binary, BINARY)
        await self.exec_as_root(environment, f"chmod 755 {BINARY}")
        await self._install_plugins(environment)

    def _plugin_files(self) -> list[Path]:
        """The `plugins` option's files, each checked to exist, with distinct names."""
        files = [Path(p.strip()) for p in (self.options.plugins or "").split(",") if p.strip()]
        for file in files:
            if file.suffix != ".wasm" or not file.is_file():
                raise FileNotFoundError(
                    f"the plugins option names {str(file)!r}, which is not a .wasm file on "
                    "this machine: give the built components, comma-separated "
                    "(--ak plugins=/path/a.wasm,/path/b.wasm)"
                )
        names = [file.name for file in files]
        if len(set(names)) != len(names):
            raise ValueError(
                f"the plugins option names two files of one name ({', '.join(names)}): each "
                "is installed under its file name, so rename one"
            )
        return files

    async def _make_home(self, environment: BaseEnvironment) -> None:
        setup = f"mkdir -p {HOME}"
        if environment.default_user is not None:
            # The task's agent user runs paddock, whose data directory this is.
            setup += f" && chown {shlex.quote(str(environment.default_user))} {HOME}"
        await self.exec_as_root(environment, setup)

    async def _install_plugins(self, environment: BaseEnvironment) -> None:
        """`paddock plugin install` of each listed plugin, as the agent user, into the
        trial's data directory: the compiled code lands in the cache the session reads (an
        entry is accepted only under that directory's own key, so it cannot be shipped)."""
        files = self._plugin_files()
        if not files:
            return
        await self._make_home(environment)
        await self.exec_as_root(environment, f"mkdir -p {PLUGINS_DIR}")
        for file in files:
            remote = f"{PLUGINS_DIR}/{file.name}"
            await environment.upload_file(file, remote)
            await self.exec_as_root(environment, f"chmod 644 {shlex.quote(remote)}")
            await self.exec_as_agent(
                environment,
                f'{FIND_BINARY}"$p" plugin install {shlex.quote(remote)}',
                env={"PADDOCK_HOME": HOME},
            )

    async def configure(self, environment: BaseEnvironment) -> None:
        await self._make_home(environment)
        if self._skip_install:
            # No install step ran: the listed plugins are installed (and compiled) here.
            await self._install_plugins(environment)
        if self._uploads_preset:
            await environment.upload_file(self.options.preset, UPLOADED_PRESET)
        if self.mcp_servers:
            base = Path(UPLOADED_PRESET).name if self._uploads_preset else self.options.preset
            addresses = await self._resolve_hosts(environment)
            await self._upload_config_text(
                environment,
                content=mcp.preset_text(base, self.mcp_servers, addresses),
                remote_path=TRIAL_PRESET,
                filename=Path(TRIAL_PRESET).name,
            )
            for server in self.mcp_servers:
                if server.transport == "sse":
                    self.logger.warning(
                        f"MCP server {server.name!r} is declared with the SSE transport; "
                        "paddock speaks streamable HTTP and reaches it that way at "
                        f"{server.url} (declare transport = \"streamable-http\" to say so)"
                    )

    async def _resolve_hosts(self, environment: BaseEnvironment) -> dict[str, str]:
        """Each URL server's host name, resolved where paddock will reach it: the environment."""
        addresses = {}
        for host in {h for s in self.mcp_servers if (h := mcp.host_of(s))}:
            found = await environment.exec(
                f"getent ahostsv4 {shlex.quote(host)} | head -n 1 | cut -d ' ' -f 1"
            )
            address = (found.stdout or "").strip()
            if found.return_code == 0 and address:
                addresses[host] = address
        return addresses

    def _preset(self) -> str:
        if self.mcp_servers:
            return TRIAL_PRESET
        return UPLOADED_PRESET if self._uploads_preset else self.options.preset

    @with_prompt_template
    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        logs = self.environment_logs_dir
        args = ["run", "--json", "--preset", self._preset(), "--on-ask", "allow"]
        args += ["--atif", str(logs / "trajectory.json")]
        connection = self.model_connection
        if self.model_name:
            args += ["--model", self.model_name]
        provider = self.options.provider or WIRE_OF_FORMAT.get(connection.model_api_format)
        if provider:
            args += ["--provider", provider]
        if self.options.max_turns is not None:
            args += ["--max-turns", str(self.options.max_turns)]
        args += ["--", instruction]
        stream, stderr = logs / "paddock.jsonl", logs / "paddock.stderr"
        # The exit code is paddock's; the output is the stream's last line, its `result`. The
        # session's log goes beside the stream (the data directory also holds compiled code).
        command = (
            f'{FIND_BINARY}"$p" {shlex.join(args)} > {stream} 2> {stderr}; code=$?; '
            f"cp -r {HOME}/sessions {logs}/ 2>/dev/null; tail -n 1 {stream}; exit $code"
        )
        env = {"PADDOCK_HOME": HOME, **connection.env}
        # Not `exec_as_agent`: it raises on every non-zero exit, and a budget stop is a run.
        ran = await environment.exec(command, env=env)
        if ran.return_code in FINISHED:
            return
        line = (ran.stdout or "").strip()
        raise error_class(result_of(line))(
            f"paddock exited {ran.return_code}: "
            f"{line or 'no result line: ' + (ran.stderr or '').strip()[-2000:]} "
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


def result_of(line: str) -> dict | None:
    """The `data` of `line` when it is a `result` event."""
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return None
    if isinstance(event, dict) and event.get("type") == "result":
        return event.get("data")
    return None


def last_result(stream: Path) -> dict | None:
    """The `data` of the `result` line that ends a `paddock run --json` stream, if it has one."""
    try:
        lines = stream.read_text().splitlines()
    except FileNotFoundError:
        return None
    for line in reversed(lines):
        if (result := result_of(line)) is not None:
            return result
    return None
