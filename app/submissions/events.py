"""Wake the requests that wait for a grade (``?wait=N``) when it is written, instead of polling the database.

The worker that finishes a submission calls ``GradeEvents.finished`` (in the embedded default it runs in the API's
process); in scale-out mode the Celery workers publish the id on a Redis channel that every API process listens
to (``RedisRelay``). A waiter re-reads the database once when woken, and, as a safety net for a notification that
never came (a broker hiccup), once every ``SAFETY_POLL_S`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)
SAFETY_POLL_S = 2.0
CHANNEL = "autograder:finished"


class GradeEvents:
    """Submission id -> the asyncio events of the requests waiting for it; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[int, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}

    @contextlib.contextmanager
    def listen(self, submission_id: int) -> Iterator[asyncio.Event]:
        """An event set when the submission is finished; register BEFORE reading its status, so none is missed."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiters.setdefault(submission_id, set()).add(entry)
        try:
            yield entry[1]
        finally:
            with self._lock:
                waiting = self._waiters.get(submission_id)
                if waiting is not None:
                    waiting.discard(entry)
                    if not waiting:
                        del self._waiters[submission_id]

    def finished(self, submission_id: int) -> None:
        """Called from any thread once a submission's grade (or error) is committed."""
        with self._lock:
            waiting = list(self._waiters.get(submission_id, ()))
        for loop, event in waiting:
            with contextlib.suppress(RuntimeError):  # the waiter's loop has closed meanwhile
                loop.call_soon_threadsafe(event.set)

    def waiting(self) -> int:
        with self._lock:
            return sum(len(w) for w in self._waiters.values())


def redis_publisher(url: str) -> Callable[[int], None]:
    """For Celery workers: publish each finished submission's id to every API process."""
    import redis

    client = redis.Redis.from_url(url)

    def publish(submission_id: int) -> None:
        try:
            client.publish(CHANNEL, str(submission_id))
        except redis.RedisError as exc:  # the waiter's safety poll still finds the grade
            log.warning("could not publish that submission %s is finished: %s", submission_id, exc)

    return publish


class RedisRelay:
    """In an API process of the scale-out mode: relays the workers' Redis notifications to local waiters."""

    def __init__(self, url: str, events: GradeEvents) -> None:
        self.url, self.events = url, events
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="grade-events", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        import redis

        interrupted = False
        while not self._stop.is_set():
            try:
                pubsub = redis.Redis.from_url(self.url).pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(CHANNEL)
                interrupted = False
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    if message and message.get("type") == "message":
                        with contextlib.suppress(ValueError):
                            self.events.finished(int(message["data"]))
            except redis.RedisError as exc:  # reconnect; meanwhile the waiters' safety poll covers
                if not interrupted:  # one line per outage, not one per reconnect attempt
                    log.warning("grade notifications from Redis interrupted: %s", exc)
                interrupted = True
                self._stop.wait(1.0)
