"""A check cycle's round of pod reads (lagbot.remediations.executors.pod_evidence.ReadRound), on a clock of its own."""

from __future__ import annotations

from lagbot.remediations.executors.base import CutShort, Deadline, ExecutorError, NoAnswer, NotFound
from lagbot.remediations.executors.pod_evidence import ReadRound, Refusal


class Clock:
    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


def test_the_deadline_is_set_at_the_first_read_and_a_spent_round_asks_no_one() -> None:
    clock = Clock(100.0)
    round = ReadRound(5.0, clock=clock)
    server = object()
    assert round.deadline is None and round.closed(server) is None  # made early: its time counts from the first read
    clock.at = 130.0
    assert round.start() == Deadline(at=135.0, seconds=5.0)
    clock.at = 134.9
    assert round.start() == Deadline(at=135.0, seconds=5.0) and round.closed(server) is None
    clock.at = 135.0
    assert round.closed(server) == Refusal(CutShort, "not asked: this check's 5 s for reading pods is spent")


def test_a_server_that_gave_no_answer_is_not_asked_again_and_an_answer_closes_nothing() -> None:
    round = ReadRound(5.0, clock=Clock(0.0))
    silent, answering = object(), object()
    round.start()
    round.failed(answering, NotFound("could not read pod shop/orders-a: 404 Not Found"))
    round.failed(answering, ExecutorError("could not read pod shop/orders-b: forbidden by RBAC"))
    assert round.closed(answering) is None
    round.failed(silent, NoAnswer("could not read pod shop/orders-c: ReadTimeoutError: timed out"))
    assert round.closed(silent) == Refusal(NoAnswer, "not asked: the API server gave no answer earlier in this check")
    assert round.closed(answering) is None


def test_a_refusal_kept_raises_its_own_kind_again() -> None:
    kept = Refusal.of(NotFound("could not read pod shop/orders-a: 404 Not Found"))
    again = kept.error()
    assert type(again) is NotFound and str(again) == "could not read pod shop/orders-a: 404 Not Found"
