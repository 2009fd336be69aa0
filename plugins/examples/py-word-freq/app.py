"""word_freq: a paddock tool plugin in Python, built into a component by componentize-py
(world `tool-plugin`). The most frequent words of a text, counted without case.

`paddock plugin new NAME --lang python` starts a project from this very file (the tool
named after the project); its README gives the componentize-py command that builds it.
"""

import json
from collections import Counter

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types

NAME = "word_freq"

PARAMETERS = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The text to count words in."},
        "top": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "description": "How many of the most frequent words to return (default 5).",
        },
    },
    "required": ["text"],
    "additionalProperties": False,
}


class Tools(exports.Tools):
    def list(self) -> list[types.ToolSpec]:
        return [
            types.ToolSpec(
                name=NAME,
                description=(
                    "The most frequent words of a text, case-insensitive, most frequent first. "
                    "Use it to see what a passage is about; it reads no files. Returns one "
                    "`word count` pair per line."
                ),
                parameters=json.dumps(PARAMETERS),
                examples=[
                    types.Example(
                        args='{"text": "a b a", "top": 1}',
                        correct=True,
                        note="the one most frequent word",
                    )
                ],
                read_only=True,
                concurrency_safe=True,
                idempotent=True,
                cancellable=True,
                risk=types.Risk.LOW,
                output_budget=None,
                path_params=[],
            )
        ]

    def call(self, name: str, args: str) -> types.ToolOutput:
        if name != NAME:
            raise Err(types.ToolError("UNKNOWN_TOOL", f"this plugin has no tool `{name}`; it has: {NAME}", False))
        parsed = json.loads(args)
        top = parsed.get("top", 5)
        words = [w.strip(".,;:!?\"'()[]{}").lower() for w in parsed["text"].split()]
        counts = Counter(w for w in words if w)
        # sorted, not most_common: componentize-py bundles only the modules it sees imported,
        # and most_common imports heapq lazily.
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
        lines = [f"{word} {count}" for word, count in ranked]
        return types.ToolOutput(content="\n".join(lines), truncated=False, continuation=None)
