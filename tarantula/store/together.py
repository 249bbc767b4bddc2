"""Questions a store answers together: those asked in one turn of the event loop (the pages parsed
at the same moment) go to the store in one step, a round trip to Redis or one transaction of the
database a crawl's processes share, instead of one step each.

asyncio has no such batching of awaited calls, and neither Scrapy nor redis-py offer one: a
future per question, answered when the loop's turn is over, is all it takes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

Question = TypeVar("Question")
Answer = TypeVar("Answer")


class Together(Generic[Question, Answer]):
    """``answer`` takes the questions asked in one turn of the event loop (with ``gather``, in
    the ``gather`` seconds after the first), in the order asked, and gives their answers in the
    same order; :meth:`ask` awaits one. Outside an event loop a question is answered at once,
    alone."""

    def __init__(self, answer: Callable[[list[Question]], list[Answer]], *,
                 gather: float = 0.0) -> None:  # fmt: skip
        self.answer = answer
        self.gather = gather
        self._waiting: list[tuple[Question, asyncio.Future[Answer]]] = []

    async def ask(self, question: Question) -> Answer:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self.answer([question])[0]
        future: asyncio.Future[Answer] = loop.create_future()
        if not self._waiting:
            if self.gather:
                loop.call_later(self.gather, self._send)
            else:
                loop.call_soon(self._send)
        self._waiting.append((question, future))
        return await future

    def _send(self) -> None:
        waiting, self._waiting = self._waiting, []
        try:
            answers = self.answer([question for question, _ in waiting])
        except Exception as error:  # each asker raises it
            for _, future in waiting:
                if not future.done():
                    future.set_exception(error)
            return
        for (_, future), answer in zip(waiting, answers, strict=True):
            if not future.done():  # not cancelled meanwhile (a crawl closing)
                future.set_result(answer)
