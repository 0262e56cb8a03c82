"""llama.cpp's native completion API: ``POST /completion``.

Request ``{"prompt": "…", "n_keep": K, "n_predict", "stream"}``. A prompt of the window
(``--context-window``, else :data:`DEFAULT_N_CTX`, llama-server's ``--ctx-size``) or more
is cut as llama.cpp's server cut it before it refused over-long prompts
(:mod:`.truncation`): the first ``n_keep`` tokens and the tail are kept, and the answer
says ``"truncated": true`` with ``tokens_evaluated``, the tokens of what was kept. With
``refuse_over_window`` (``--refuse-over-window``) it is refused as llama.cpp's server
refuses it today: a 400 whose ``error`` has ``"type": "exceed_context_size_error"``,
``n_prompt_tokens`` and ``n_ctx`` (:func:`.errors.llama_context_exceeded`).

The answer: ``{"index", "content", "id_slot", "stop": true, "model",
"tokens_predicted", "tokens_evaluated", "generation_settings": {"n_ctx", "n_keep",
"n_predict"}, "prompt", "has_new_line", "truncated", "stop_type": "eos",
"stopping_word", "tokens_cached", "timings": {"prompt_n", "predicted_n", …}}``. With
``"stream": true``: ``data: {…}`` events, the text in pieces with ``"stop": false``, then
the closing object. A scripted tool call is answered as its JSON text (``/completion``
has no tool calls).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxledger_cli.provider import errors, sse
from ctxledger_cli.provider.engine import Discard, Engine, Reply
from ctxledger_cli.provider.tokens import compact_json, count_text
from ctxledger_cli.provider.truncation import truncate

#: llama-server's default ``--ctx-size``.
DEFAULT_N_CTX = 4096
#: The model a bare ``/completion`` counts with (llama-server needs none in the body).
DEFAULT_MODEL = "llama"

_NO_HEADERS: Mapping[str, str] = {}


def _error(message: str) -> Reply:
    return Reply(400, {"error": {"code": 400, "message": message, "type": "invalid_request_error"}})


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def handle(
    payload: Mapping[str, Any], engine: Engine, headers: Mapping[str, str] = _NO_HEADERS
) -> Reply:
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        return _error('"prompt" must be a string')
    given = payload.get("model")
    model = given if isinstance(given, str) and given else DEFAULT_MODEL
    counting = engine.counting
    n_ctx = engine.window_for(model, DEFAULT_N_CTX)
    n_keep = _int(payload.get("n_keep"), 0)
    own = count_text(prompt, counting.model_for(model))  # the text alone: no messages
    if engine.refuse_over_window and counting.units(own) >= n_ctx:
        # ">=" as llama.cpp: a prompt filling the window leaves no cell to decode into.
        refusal = errors.llama_context_exceeded(counting.units(own), n_ctx)
        return Reply(refusal.status, refusal.body)
    cut = truncate(own, counting.own(n_ctx), n_keep if n_keep < 0 else counting.own(n_keep))
    evaluated = counting.units(cut.kept)
    if cut.truncated:
        engine.note(
            Discard(
                "completion",
                0,
                counting.units(own),
                evaluated,
                policy="token_truncate",
                declared=True,
                keep_tokens=cut.keep,
            )
        )
    step = engine.next_step()
    content = step.text or ""
    if step.tool_calls:
        content += compact_json(
            [{"name": c.name, "arguments": dict(c.arguments)} for c in step.tool_calls]
        )
    predicted = counting.text(content, model)
    n_predict = _int(payload.get("n_predict"), -1)
    closing: dict[str, Any] = {
        "index": 0,
        "content": content,
        "tokens": [],
        "id_slot": 0,
        "stop": True,
        "model": model,
        "tokens_predicted": predicted,
        "tokens_evaluated": evaluated,
        "generation_settings": {"n_ctx": n_ctx, "n_keep": n_keep, "n_predict": n_predict},
        "prompt": prompt,
        "has_new_line": "\n" in content,
        "truncated": cut.truncated,
        "stop_type": "eos",
        "stopping_word": "",
        "tokens_cached": 0,
        "timings": {
            "prompt_n": evaluated,
            "prompt_ms": evaluated * 0.05,
            "predicted_n": predicted,
            "predicted_ms": predicted * 0.5,
        },
    }
    if not payload.get("stream"):
        return Reply(200, closing)
    pieces = [content[i : i + 16] for i in range(0, len(content), 16)]
    frames = [
        sse.data_frame(
            {
                "index": 0,
                "content": piece,
                "tokens": [],
                "stop": False,
                "id_slot": 0,
                "tokens_predicted": n + 1,
                "tokens_evaluated": evaluated,
            }
        )
        for n, piece in enumerate(pieces)
    ]
    frames.append(sse.data_frame({**closing, "content": ""}))
    return Reply(200, events=tuple(frames))
