"""Harbor's error class for a paddock run that did not finish, read from its `result` line
(docs/json-events.md) rather than from free text, so nothing the model or a tool printed can
choose it.

A `model_error` stop is classified by what paddock says of the provider's answer in `detail`:
the HTTP status of the last failed attempt (`HTTP 429 from URL: ...`, the wording of
`ModelError` in runtime/src/model/error.rs), the provider's own words for a request longer than
the context (paddock compacts once and retries before it gives up), a connection that could not
be made, a stream that stalled or broke, a content filter or a refusal. Everything else, and
every other stop reason, is Harbor's plain `NonZeroAgentExitCodeError`, as Harbor's own agents
report an unrecognised failure.
"""

import re

from harbor.agents.installed.base import (
    AgentAuthenticationError,
    AgentSafetyRefusalError,
    ApiConnectionClosedError,
    ApiInternalServerError,
    ApiOverloadedError,
    ApiRateLimitError,
    ApiResponseStalledError,
    ContextWindowExceededError,
    ModelNotFoundError,
    NetworkConnectionError,
    NonZeroAgentExitCodeError,
    UnknownApiError,
)

# The status paddock reports for the attempt it gave up on ("gave up after N attempts; last
# error: HTTP 429 from URL: BODY", "... the server answered HTTP 500 with the same error
# twice ..."): the first in `detail`, which is paddock's wording, not the server's body after it.
STATUS = re.compile(r"\bHTTP (\d{3}) (?:from |with the same error)")

# The statuses with a class of their own; any other status is an unclassified API error.
BY_STATUS: dict[int, type[NonZeroAgentExitCodeError]] = {
    401: AgentAuthenticationError,
    403: AgentAuthenticationError,
    404: ModelNotFoundError,
    429: ApiRateLimitError,
    500: ApiInternalServerError,
    502: ApiOverloadedError,
    503: ApiOverloadedError,
    504: ApiOverloadedError,
    529: ApiOverloadedError,
}

# How servers word a request longer than the model's context (paddock's own list, in
# runtime/src/model/context.rs, is the one it compacts on), for the statuses they send it with.
OVERFLOW_STATUSES = {400, 413, 422}
OVERFLOW_WORDS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "exceeds the available context",
    "input is too long",
    "reduce the length",
)

# paddock's own wording of the failures that carry no status (runtime/src/model/error.rs and
# the loop's stops for a filtered or refused answer).
BY_WORDING: tuple[tuple[str, type[NonZeroAgentExitCodeError]], ...] = (
    ("could not reach ", NetworkConnectionError),
    ("the stream stalled", ApiResponseStalledError),
    ("no response from ", ApiResponseStalledError),
    ("the stream broke off", ApiConnectionClosedError),
    ("content filter", AgentSafetyRefusalError),
    ("the model refused", AgentSafetyRefusalError),
)


def error_class(result: dict | None) -> type[NonZeroAgentExitCodeError]:
    """Harbor's class for a run that ended with `result` (the `result` line's `data`)."""
    if not result or result.get("stop_reason") not in ("model_error", "protocol_error"):
        return NonZeroAgentExitCodeError
    detail = str(result.get("detail") or "")
    found = STATUS.search(detail)
    if found:
        status = int(found.group(1))
        lowered = detail.lower()
        if status in OVERFLOW_STATUSES and any(w in lowered for w in OVERFLOW_WORDS):
            return ContextWindowExceededError
        return BY_STATUS.get(status, UnknownApiError)
    for wording, error in BY_WORDING:
        if wording in detail:
            return error
    return UnknownApiError
