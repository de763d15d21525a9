"""`serve`'s problem sets, loaded and gated in one background thread while the server already answers.

The port opens at once; this thread then takes the folders of the problems directory one after another (the
cheapest gates first), and after them every other stored set whose live version was checked by another checking code
(app.problemsets.checking_code). Students are offered only versions that passed: a new version is stored only
after its whole gate, and the version that was live stays live while a newer one, or itself with a new checking
code, is checked, and after either is refused (a refused re-check is shown to the instructors; it does not take a
set away from students in the middle of a course, for instance because a timing check could not be reproduced
on a busy machine).

Each set's state is in memory for `/healthz` and the instructor page (``snapshot``, ``statuses``). The app's
lifespan starts the thread and stops it: a stop is seen after the file being graded, and whatever the gate had
not finished is dropped (nothing stored, nothing recorded as refused), so the next start checks it again.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy.orm import Session

from app.config import Settings
from app.problemsets import refused
from app.problemsets import service as sets
from app.problemsets.models import ProblemSet, ProblemSetVersion
from app.problemsets.variants import variant_checkers
from graders.code.grader import CodeGraderLike
from graders.grade import validate_set
from graders.problemset.errors import ProblemSetInvalid
from graders.problemset.loader import LoadedSet, load_problem_set
from graders.problemset.validate import ValidationReport

log = logging.getLogger(__name__)
Phase = Literal["queued", "checking", "done", "refused", "failed"]
STOP_WAIT_S = 10.0  # how long the shutdown waits for the file being graded; the thread is a daemon after that


class _Stopping(BaseException):
    """Raised from the gate's progress when the app is stopping, to end the gate after the file it graded. A
    BaseException, as KeyboardInterrupt is: the gate turns any Exception of a problem into one of its errors and
    goes on with the next problem, and a stop must end it instead."""


@dataclass
class SetStatus:
    """One set's state. ``live``: the version number students are offered (None: none yet). ``recheck``: what is
    checked is the live version itself, again, because the checking code changed (else a new version)."""

    key: str  # the set's id (the folder's name until the folder has been read)
    live: int | None = None
    phase: Phase = "queued"
    recheck: bool = False
    done: int = 0
    total: int = 0
    errors: int = 0
    report: dict[str, Any] | None = None  # the refused gate's report, for the instructor page
    gate_texts: dict[str, str] | None = None
    public: bool = True  # in `/healthz`; a hidden set uploaded on the web is re-checked on the instructor page only

    @property
    def settled(self) -> bool:
        return self.phase in ("done", "refused", "failed")

    def text(self) -> str:
        """The state in a few words (`/healthz`): "queued", "checking 12/41", "live", "refused: 2 errors (...)";
        "live; ..." whenever a version is offered to students while it waits for its turn ("live; queued"),
        while something else is checked or after that was refused."""
        counts = f" {self.done}/{self.total}" if self.total else ""
        what = ""
        if self.phase == "queued":
            what = "re-check queued" if self.recheck else "queued"
        elif self.phase == "checking":
            if self.live is None:
                what = f"checking{counts}"
            elif self.recheck:
                what = f"re-checking{counts} (the checking code changed)"
            else:
                what = f"checking a new version{counts}"
        elif self.phase == "refused":
            # The errors themselves (check and mutant names) are for the instructors: this text is public.
            why = f"{self.errors} error{'s' if self.errors != 1 else ''} (the instructor page has the report)"
            if self.live is None:
                what = f"refused: {why}"
            else:
                what = f"re-check refused: {why}" if self.recheck else f"the new version was refused: {why}"
        elif self.phase == "failed":
            what = "failed: an internal error (see the server log)"
        if self.live is None:
            return what or "live"  # done without a live version cannot happen; say what students see
        return f"live; {what}" if what else "live"


class SetLoader:
    """Loads ``settings.problems_dir`` and re-checks stale stored sets in one thread (see the module docstring).

    ``write_gate``: taken around each write, as the API's writes take it (one SQLite writer at a time)."""

    def __init__(
        self,
        settings: Settings,
        session_factory: Callable[[], Session],
        grader: CodeGraderLike,
        *,
        assign: Callable[[Session, ProblemSet], object],
        write_gate: Any = None,
    ) -> None:
        """``assign``: what a folder's set gets once its version is live, in the same transaction (the app factory
        passes app.courses.service.default_assignment: assigned in the home offering, once, as `problems load`
        does); handed in because problem sets sit below courses."""
        self.settings = settings
        self._assign = assign
        self._sessions = session_factory
        self._grader = grader
        self._write_gate = write_gate
        self._lock = threading.Lock()
        self._statuses: dict[str, SetStatus] = {}
        self._renamed: dict[str, str] = {}  # folder name -> its set's id, once read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what the pages read -----------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, str]:
        """Set id -> its state in words, for `/healthz`."""
        with self._lock:
            return {key: status.text() for key, status in self._statuses.items() if status.public}

    def statuses(self) -> list[SetStatus]:
        with self._lock:
            return [SetStatus(**vars(s)) for s in self._statuses.values()]

    @property
    def settled(self) -> bool:
        """Whether every set has been looked at (none queued or being checked)."""
        with self._lock:
            return all(s.settled for s in self._statuses.values())

    # -- the thread ----------------------------------------------------------------------------------------------

    def folders(self) -> list[Path]:
        return sorted(p.parent for p in self.settings.problems_dir.glob("*/problemset.yaml"))

    def start(self) -> None:
        """List the folders as queued (live where a stored set of that name is), then start the thread."""
        live = self._live_numbers()
        with self._lock:
            for folder in self.folders():
                self._statuses[folder.name] = SetStatus(folder.name, live=live.get(folder.name))
        self._thread = threading.Thread(target=self._run, name="set-loader", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(STOP_WAIT_S)
            if self._thread.is_alive():
                log.warning("the set loader is still grading a file; the server stops without waiting for it")

    def _ordered(self) -> list[Path]:
        """The folders, those with the fewest files to grade first: a fill-in set is live in seconds rather than
        after a code set's minutes of gate (by name among equals; an unreadable folder first, it is quick)."""

        def cost(folder: Path) -> int:
            try:
                return sets.gate_files(load_problem_set(folder))
            except Exception:
                return 0

        return sorted(self.folders(), key=lambda f: (cost(f), f.name))

    def _run(self) -> None:
        covered: set[str] = set()
        try:
            for folder in self._ordered():
                if self._stop.is_set():
                    return
                slug = self._guarded(folder.name, functools.partial(self._load_folder, folder))
                covered.add(slug or folder.name)
            for slug, version_id, number, visible in self._stale_stored(covered):
                if self._stop.is_set():
                    return
                self._set(slug, SetStatus(slug, live=number, recheck=True, public=visible))
                self._guarded(slug, functools.partial(self._recheck_stored, slug, version_id))
        except _Stopping:
            return
        except Exception:  # the thread must not die silently: a bug here leaves the rest unloaded, and says so
            log.exception("the set loader failed")

    def _guarded(self, key: str, work: Callable[[], str | None]) -> str | None:
        """One set's work; a bug (ours or an unexpected file) fails that set only, and is logged."""
        try:
            return work()
        except _Stopping:
            raise
        except Exception:
            if self._stop.is_set():  # the grader was closed under the gate by the shutdown
                raise _Stopping() from None
            key = self._renamed.get(key, key)
            log.exception("%s: loading the set failed", key)
            self._update(key, phase="failed")
            return None

    def _load_folder(self, folder: Path) -> str:
        try:
            loaded = load_problem_set(folder)
        except ProblemSetInvalid as exc:
            log.warning("%s: refused: %d error(s): %s", folder.name, len(exc.errors), "; ".join(map(str, exc.errors)))
            if self._live_of(folder.name) is None:
                refused.record(self.settings, folder, errors=[e.to_dict() for e in exc.errors], report=None,
                               text="\n".join(str(e) for e in exc.errors))  # fmt: skip
            self._update(folder.name, phase="refused", errors=len(exc.errors))
            return folder.name
        slug = loaded.spec.id
        self._rename(folder.name, slug)
        kept = self._kept_version(loaded)
        if kept is None:
            self._check_new(folder, loaded)
            return slug
        version_id, live, current, same = kept
        refused.clear(self.settings, folder)
        if current:
            self._update(slug, live=live, phase="done", recheck=False)
        else:
            self._recheck(slug, version_id, live, loaded if same else None)
        return slug

    def _kept_version(self, loaded: LoadedSet) -> tuple[int, int, bool, bool] | None:
        """The stored version that stays live for this folder: the latest when it has the folder's content or was
        made on the web after it (then the folder is older); None when the folder holds a new version.

        Returns:
            (version id, number, whether its report is current, whether it has the folder's content)."""
        with self._sessions() as session:
            latest = sets.latest_of(session, loaded.spec.id)
            self._update(loaded.spec.id, live=latest.number if latest is not None else None)
            if latest is None:
                return None
            same = latest.content_hash == loaded.content_hash
            if not same and not sets.folder_is_older(session, loaded, latest):
                return None
            # Assigned in the default offering as `problems load` does, so the demo course has it.
            with self._writing():
                self._assign(session, latest.problem_set)
                session.commit()
            return latest.id, latest.number, sets.is_current(latest), same

    def _check_new(self, folder: Path, loaded: LoadedSet) -> None:
        slug = loaded.spec.id
        live = self._live_of(slug)
        self._update(slug, live=live, phase="checking", recheck=False, done=0, total=sets.gate_files(loaded))
        log.info("%s: checking a new version (%d files to grade)", slug, sets.gate_files(loaded))
        report = self._gate(slug, loaded)
        if not report.ok:
            log.warning("%s: refused:\n%s", slug, report.render_text())
            if live is None:
                refused.record(self.settings, folder, errors=[], report=report.to_dict(), text=report.render_text())
            else:  # the live version stays: the instructors see the refusal here, not as a set students lack
                refused.clear(self.settings, folder)
            self._refused(slug, report)
            return
        with self._sessions() as session, self._writing():
            version, created, replaced = sets.store_validated(session, loaded=loaded, report=report, based_on=live)
            number = version.number if version is not None else None
            if version is not None and (created or version.content_hash == loaded.content_hash):
                self._assign(session, version.problem_set)  # not a version stored meanwhile from elsewhere
            session.commit()
            if created and version is not None:
                sets.warn_replaced(slug, version, replaced)
        refused.clear(self.settings, folder)
        log.info("%s: version %s is live\n%s", slug, number, report.render_text())
        self._update(slug, live=number, phase="done")

    def _recheck(self, slug: str, version_id: int, live: int, loaded: LoadedSet | None) -> None:
        """Gate the live version again with this process's checking code; it stays live whatever the verdict."""
        if loaded is None:
            with self._sessions() as session:
                version = session.get(ProblemSetVersion, version_id)
                if version is None:
                    return
                loaded = sets.loaded_version(self.settings, version)
        self._update(slug, live=live, phase="checking", recheck=True, done=0, total=sets.gate_files(loaded))
        log.info("%s: the checking code changed since version %d was checked; checking it again", slug, live)
        report = self._gate(slug, loaded)
        if not report.ok:
            log.warning("%s: version %d stays live, but its re-check was refused:\n%s", slug, live,
                        report.render_text())  # fmt: skip
            self._refused(slug, report)
            return
        with self._sessions() as session, self._writing():
            version = session.get(ProblemSetVersion, version_id)
            if version is not None:
                sets.record_check(session, version, report)
                session.commit()
        log.info("%s: version %d passed its gate again with the current checking code", slug, live)
        self._update(slug, phase="done")

    def _recheck_stored(self, slug: str, version_id: int) -> str:
        with self._sessions() as session:
            version = session.get(ProblemSetVersion, version_id)
            if version is None:
                return slug
            number = version.number
        self._recheck(slug, version_id, number, None)
        return slug

    def _gate(self, slug: str, loaded: LoadedSet) -> ValidationReport:
        """The full gate, outside any database session (it may take minutes); raises _Stopping on shutdown."""

        def progress(_line: str) -> None:
            with self._lock:
                self._statuses[slug].done += 1
            if self._stop.is_set():
                raise _Stopping()

        report = validate_set(
            loaded,
            code_grader=self._grader,
            progress=progress,
            max_grading_s=self.settings.grading_lease_s,
            variants=variant_checkers(self.settings),
            variant_draws=self.settings.variant_draws,
        )
        if self._stop.is_set():  # the gate caught the stop (or a grader closed under it) as one of its errors
            raise _Stopping()
        return report

    # -- state -------------------------------------------------------------------------------------------------

    def _live_numbers(self) -> dict[str, int]:
        try:
            with self._sessions() as session:
                return {ps.slug: v.number for ps, v in sets.list_sets(session, include_hidden=True)}
        except Exception:  # the database is checked by `/healthz`; the thread will find out what is live
            log.exception("could not read the stored sets")
            return {}

    def _stale_stored(self, covered: set[str]) -> list[tuple[str, int, int, bool]]:
        with self._sessions() as session:
            return [
                (ps.slug, v.id, v.number, ps.is_visible)
                for ps, v in sets.list_sets(session, include_hidden=True)
                if ps.slug not in covered and not sets.is_current(v)
            ]

    def _writing(self) -> Any:
        return self._write_gate if self._write_gate is not None else contextlib.nullcontext()

    def _live_of(self, key: str) -> int | None:
        with self._lock:
            status = self._statuses.get(key)
            return status.live if status is not None else None

    def _set(self, key: str, status: SetStatus) -> None:
        with self._lock:
            self._statuses[key] = status

    def _update(self, key: str, **changes: Any) -> None:
        with self._lock:
            status = self._statuses.setdefault(key, SetStatus(key))
            for name, value in changes.items():
                setattr(status, name, value)

    def _rename(self, old: str, new: str) -> None:
        """A folder named other than its set's id: from now on it is listed by the id."""
        with self._lock:
            self._renamed[old] = new
            if old != new and old in self._statuses:
                status = self._statuses.pop(old)
                status.key = new
                self._statuses[new] = status
            self._statuses.setdefault(new, SetStatus(new))

    def _refused(self, slug: str, report: ValidationReport) -> None:
        self._update(slug, phase="refused", errors=len(report.errors), report=report.to_dict(),
                     gate_texts=dict(report.gate_texts))  # fmt: skip
