"""{{name}}: a paddock hook in Python, built into a component by componentize-py (world
`configured-hook`).

`pre_tool_use` runs before a call, `post_tool_use` after it; both get the preset's `config`
table for this hook as JSON text. `config_schema` says what that table accepts: paddock checks a
preset against it before a session starts. Build: see the README (componentize-py ... -w
configured-hook ...).
"""

import json
from typing import Optional

from wit_world import exports
from wit_world.imports import hook_types

# What this hook's `config` accepts (a JSON Schema); keep it equal to what read_config reads.
SCHEMA = {
    "type": "object",
    "properties": {
        "deny_words": {"type": "array", "items": {"type": "string"}},
        "note": {"type": "string"},
    },
    "additionalProperties": False,
}

# The keys this hook's `config` may have; another key is a mistake in the preset, and a
# pre-hook that cannot read its config denies rather than guess.
KEYS = tuple(SCHEMA["properties"])


def read_config(event) -> dict:
    config = json.loads(event.config)
    unknown = [key for key in config if key not in KEYS]
    if unknown:
        raise ValueError(
            f"{{name}}: unknown config key `{unknown[0]}` in preset `{event.preset}`; "
            f"the keys are: {', '.join(KEYS)}"
        )
    return config


class Hooks(exports.Hooks):
    def pre_tool_use(self, event: hook_types.PreToolUseEvent) -> hook_types.PreToolUseDecision:
        try:
            config = read_config(event)
        except ValueError as e:
            return hook_types.PreToolUseDecision(hook_types.PermissionDecision_Deny(str(e)), None, None)
        for word in config.get("deny_words", []):
            if word in event.tool_input:
                reason = (
                    f"{{name}}: `{event.tool_name}` was not run because its arguments mention "
                    f"`{word}` (deny_words of hook {{name}} in preset `{event.preset}`)"
                )
                return hook_types.PreToolUseDecision(hook_types.PermissionDecision_Deny(reason), None, None)
        return hook_types.PreToolUseDecision(hook_types.PermissionDecision_Allow(), None, None)

    def post_tool_use(self, event: hook_types.PostToolUseEvent) -> hook_types.PostToolUseDecision:
        note = read_config(event).get("note")
        context = None if note is None else f"{note} ({event.tool_name})"
        return hook_types.PostToolUseDecision(None, context)


class HookConfig(exports.HookConfig):
    def config_schema(self) -> Optional[str]:
        return json.dumps(SCHEMA)
