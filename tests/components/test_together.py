"""Questions a store answers together (tarantula/store/together.py)."""

from __future__ import annotations

import asyncio

from scrapy.utils.defer import deferred_f_from_coro_f

from tarantula.store.together import Together


def doubling(calls: list[list[int]]) -> Together[int, int]:
    def answer(questions: list[int]) -> list[int]:
        calls.append(questions)
        return [q * 2 for q in questions]

    return Together(answer)


@deferred_f_from_coro_f
async def test_questions_asked_in_one_turn_of_the_loop_are_answered_in_one_step():
    calls: list[list[int]] = []
    together = doubling(calls)
    assert await asyncio.gather(together.ask(1), together.ask(2)) == [2, 4]
    assert await together.ask(3) == 6
    assert calls == [[1, 2], [3]]


@deferred_f_from_coro_f
async def test_with_gather_questions_of_later_turns_join_the_first_s_step():
    calls: list[list[int]] = []
    together = doubling(calls)
    together.gather = 1.0  # long beside a few turns of the loop, even on a loaded machine

    async def later(question: int, turns: int) -> int:
        for _ in range(turns):
            await asyncio.sleep(0)
        return await together.ask(question)

    assert await asyncio.gather(later(1, 0), later(2, 3), later(3, 10)) == [2, 4, 6]
    assert calls == [[1, 2, 3]]
