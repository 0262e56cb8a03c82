"""The received rule over a seeded corpus of random conversations (issue 29).

Each conversation is a system prompt, user turns, assistant turns with one to three
parallel tool calls and their results. A simulated server reads it in its own (true)
tokens; our count is off by a random tokenizer error within the tolerance (a uniform
scale and a token of jitter per segment). The server then applies a random policy to a
random window: ollama-like front discard of whole messages, llama.cpp-like token
truncation after ``keep_tokens``, middle discard, context editing, refusal, or a policy
it does not name. It also counts tool definitions we never see.

Properties: no result the server read is ever called lost (no false loss, over
:data:`CONVERSATIONS` conversations); when the server discarded more than the tolerance
can hide, the lost call ids are exactly the discarded ones (front discard, edits).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from ctxledger import semconv as sc
from ctxledger.verdicts.model import ReceivedRecord
from ctxledger.verdicts.received import (
    DEFAULT_TOLERANCE,
    KEPT,
    judge_received,
    reads_everything,
)
from ctxledger.verdicts.received_stages import quiet_outcome

#: The size of the corpus the closing note cites.
CONVERSATIONS = 3_000
PRIMING = 3
POLICIES = (
    sc.POLICY_FRONT_DISCARD,
    None,
    sc.POLICY_TOKEN_TRUNCATE,
    sc.POLICY_MIDDLE_DISCARD,
    sc.POLICY_PROVIDER_EDIT,
    sc.POLICY_REFUSE,
)


@dataclass
class Conversation:
    call_ids: list[str]
    roles: list[str]
    true_tokens: list[int]
    our_tokens: list[int]
    chars: list[int]
    tool_definitions: int
    exact: bool

    @property
    def counted(self) -> int:
        return sum(self.our_tokens) + PRIMING

    @property
    def server_total(self) -> int:
        return self.tool_definitions + sum(self.true_tokens) + PRIMING


def conversation(rng: random.Random) -> Conversation:
    call_ids, roles, tokens = [""], [sc.ROLE_SYSTEM], [rng.randint(20, 600)]
    for turn in range(rng.randint(1, 5)):
        call_ids.append("")
        roles.append(sc.ROLE_USER)
        tokens.append(rng.randint(5, 300))
        calls = rng.randint(1, 3)
        call_ids.append("")
        roles.append(sc.ROLE_ASSISTANT)
        tokens.append(rng.randint(10, 120))
        for n in range(calls):
            call_ids.append(f"call_{turn}_{n}")
            roles.append(sc.ROLE_TOOL)
            tokens.append(rng.choice((rng.randint(5, 200), rng.randint(200, 4_000))))
    exact = rng.random() < 0.5
    while True:  # a tokenizer error within the tolerance: the whole request is read
        scale = rng.uniform(0.985, 1.015) if exact else rng.uniform(0.8, 1.25)
        ours = [max(round(t * scale) + rng.randint(-1, 1), 0) for t in tokens]
        conv = Conversation(
            call_ids, roles, tokens, ours, [t * 4 for t in tokens], rng.randint(0, 400), exact
        )
        if conv.counted - (sum(tokens) + PRIMING) <= DEFAULT_TOLERANCE.tokens(conv.counted, exact):
            return conv


def front_discard(conv: Conversation, window: int) -> tuple[int, set[str]]:
    """ollama: the oldest non-system messages go, whole, until the prompt fits; the last
    message always stays."""
    total, lost = conv.server_total, set()
    for i in range(1, len(conv.true_tokens) - 1):
        if total <= window:
            break
        total -= conv.true_tokens[i]
        if conv.call_ids[i]:
            lost.add(conv.call_ids[i])
    return total, lost


def token_truncate(conv: Conversation, window: int, keep: int) -> tuple[int, set[str]]:
    """llama.cpp: the first ``keep`` tokens stay (tool definitions first), then the
    tokens after them go until the prompt fits."""
    discard = max(conv.server_total - window, 0)
    lo, hi = keep, keep + discard
    offset, lost = conv.tool_definitions, set()
    for call_id, size in zip(conv.call_ids, conv.true_tokens, strict=True):
        if call_id and offset < hi and offset + size > lo:
            lost.add(call_id)
        offset += size
    return conv.server_total - discard, lost


def middle_discard(conv: Conversation, window: int) -> tuple[int, set[str]]:
    """The middle of the non-system messages goes until the prompt fits."""
    discard = max(conv.server_total - window, 0)
    sizes = [(c, t) for c, t, r in zip(conv.call_ids, conv.true_tokens, conv.roles, strict=True)]
    eligible = [(c, t) for (c, t), r in zip(sizes, conv.roles, strict=True) if r != "system"]
    total = sum(t for _, t in eligible)
    discard = min(discard, total)
    lo = (total - discard) // 2
    hi, offset, lost = lo + discard, 0, set()
    for call_id, size in eligible:
        if call_id and offset < hi and offset + size > lo:
            lost.add(call_id)
        offset += size
    return conv.server_total - discard, lost


@dataclass
class Case:
    record: ReceivedRecord
    truly_lost: set[str]
    #: The discard is large enough that the rule must name exactly ``truly_lost``.
    clear: bool
    #: What the server reports when it reads the whole request.
    read_whole: int


def case(seed: int) -> Case:
    rng = random.Random(seed)
    conv = conversation(rng)
    policy = rng.choice(POLICIES)
    window = round(conv.server_total * rng.uniform(0.3, 1.2))
    extra: dict[str, object] = {}
    clear = False
    if policy in (sc.POLICY_FRONT_DISCARD, None):
        read, lost = front_discard(conv, window)
        clear = policy is not None and _front_is_clear(conv, read, lost)
    elif policy == sc.POLICY_TOKEN_TRUNCATE:
        keep = rng.randint(0, conv.true_tokens[0] + conv.tool_definitions)
        read, lost = token_truncate(conv, window, keep)
        extra["keep_tokens"] = keep
    elif policy == sc.POLICY_MIDDLE_DISCARD:
        read, lost = middle_discard(conv, window)
    elif policy == sc.POLICY_PROVIDER_EDIT:
        ids = [c for c in conv.call_ids if c]
        lost = set(rng.sample(ids, rng.randint(0, len(ids))))
        read = conv.server_total - sum(
            t for c, t in zip(conv.call_ids, conv.true_tokens, strict=True) if c in lost
        )
        extra["cleared_call_ids"] = tuple(sorted(lost))
        clear = True
    else:  # refuse: the server answered an error, nothing was read or lost
        read, lost = conv.server_total, set()
        clear = True
    record = ReceivedRecord(
        trace_id="ab" * 16,
        request_id=f"req_{seed}",
        input_tokens=read,
        counted_tokens=conv.counted,
        tokenizer="o200k_base",
        exact=conv.exact,
        policy=policy,
        segment_call_ids=tuple(conv.call_ids),
        segment_tokens=tuple(conv.our_tokens),
        segment_chars=tuple(conv.chars),
        segment_roles=tuple(conv.roles),
        **extra,  # type: ignore[arg-type]
    )
    return Case(record, lost, clear, conv.server_total)


def _front_is_clear(conv: Conversation, read: int, lost: set[str]) -> bool:
    """The last result the server dropped is larger (in our tokens) than twice the
    tolerance, what the tokenizer error of the dropped part can hide and the tool
    definitions the server counts but the request's segments never show (they hide as
    many discarded tokens)."""
    if not lost:
        return read >= conv.server_total
    last = max(i for i, c in enumerate(conv.call_ids) if c in lost)
    dropped_true = sum(conv.true_tokens[1 : last + 1])
    dropped_ours = sum(conv.our_tokens[1 : last + 1])
    tolerance = DEFAULT_TOLERANCE.tokens(conv.counted, conv.exact)
    margin = 2 * tolerance + abs(dropped_ours - dropped_true) + conv.tool_definitions + 8
    return conv.our_tokens[last] > margin


def test_no_false_loss_and_the_right_call_ids_over_the_corpus() -> None:
    false_losses: list[tuple[int, set[str]]] = []
    wrong: list[tuple[int, set[str], set[str]]] = []
    clear = judged_losses = 0
    for seed in range(CONVERSATIONS):
        c = case(seed)
        found = {r.call_id for r in judge_received(c.record).lost}
        judged_losses += bool(found)
        if found - c.truly_lost:
            false_losses.append((seed, found - c.truly_lost))
        if c.clear:
            clear += 1
            if found != c.truly_lost:
                wrong.append((seed, found, c.truly_lost))
    assert false_losses == [], f"{len(false_losses)} false losses, first: {false_losses[:5]}"
    assert wrong == [], f"{len(wrong)} clear discards named wrongly, first: {wrong[:5]}"
    # The corpus exercises both properties, or the test could not fail.
    assert clear >= CONVERSATIONS // 5, clear
    assert judged_losses >= CONVERSATIONS // 5, judged_losses
    print(
        f"received rule corpus: {CONVERSATIONS} conversations, 0 false losses, "
        f"{clear} clear discards named exactly, {judged_losses} with a loss found"
    )


def test_no_discard_is_never_a_loss_over_the_corpus() -> None:
    """The same conversations read whole, under every policy but an edit (which names
    its results whatever the count)."""
    for seed in range(CONVERSATIONS):
        c = case(seed)
        if c.record.policy == sc.POLICY_PROVIDER_EDIT:
            continue
        whole = replace(c.record, input_tokens=c.read_whole)
        assert judge_received(whole).lost == (), seed


def test_reads_everything_only_where_the_rule_keeps_every_result_quietly() -> None:
    """``reads_everything`` (what a long run's request is asked before one outcome per
    result is built) implies the rule's outcome: every result kept, no reason, no note;
    over the corpus as read and as read whole, both answers occur."""
    answers = {True: 0, False: 0}
    for seed in range(CONVERSATIONS):
        c = case(seed)
        for record in (c.record, replace(c.record, input_tokens=c.read_whole)):
            everything = reads_everything(record)
            answers[everything] += 1
            if everything:
                assert quiet_outcome(judge_received(record)), seed
                assert {r.outcome for r in judge_received(record).results} <= {KEPT}, seed
    assert min(answers.values()) >= CONVERSATIONS // 5, answers
