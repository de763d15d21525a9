"""Settings: one pydantic-settings class (env prefix AUTOGRADER_), built by a cached get_settings()."""

from __future__ import annotations

import secrets
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PLACEHOLDER_SECRETS = frozenset({"change-me", "changeme", "secret", "dev", "placeholder", "xxx", ""})
REPO_ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AUTOGRADER_", env_file=None, extra="ignore")

    dev_mode: bool = Field(default=False, description="relaxes safety checks; never in production")
    data_dir: Path = Field(default=Path("data"), description="SQLite file, secret key, problem-set cache")
    database_url: str | None = Field(default=None, description="default: sqlite:///<data_dir>/autograder.db")
    database_connect_timeout_s: int = Field(
        default=10, ge=2, le=600, description="PostgreSQL: a connection not made within this fails (a 503)"
    )
    database_statement_timeout_s: float = Field(
        default=30.0, ge=0, description="PostgreSQL: a statement of the service running longer is cancelled; 0: off"
    )
    database_busy_timeout_s: float = Field(
        default=10.0, gt=0, le=600, description="SQLite: how long a write waits for another's lock before a 503"
    )
    broker_url: str | None = Field(default=None, description="Celery broker (redis://...); none = embedded workers")
    secret_key: SecretStr | None = Field(default=None, description="signs session cookies; default: generated once")
    sandbox: Literal["bwrap", "unsafe-local"] = Field(default="bwrap", description="unsafe-local needs dev_mode")
    sandbox_device: Literal["auto", "cpu", "cuda"] = Field(
        default="auto", description="where student tensors live; auto = cuda when this worker has a GPU"
    )
    workers: int = Field(default=2, ge=0, le=64, description="embedded grading workers started by `serve`")
    prewarm_sandbox: bool = Field(
        default=True, description="start the sandbox zygotes when workers start, not on the first code submission"
    )
    problems_dir: Path = Field(default=REPO_ROOT / "problems", description="problem sets loaded by `serve`")
    load_problems_on_start: bool = True
    max_body_bytes: int = Field(default=1 << 20, ge=1024, description="largest JSON or form body")
    max_upload_bytes: int = Field(default=20 << 20, ge=1024, description="largest problem-set archive")
    max_archive_files: int = Field(default=500, ge=1)
    max_unpacked_bytes: int = Field(default=100 << 20, ge=1024)
    max_wait_s: float = Field(default=60.0, ge=0, description="cap on ?wait=N")
    grading_lease_s: float = Field(
        default=600.0,
        gt=0,
        description="the longest a grading may take (a set whose checks could run longer is refused); a job's "
        "lease never lasts longer",
    )
    variant_draws: int = Field(
        default=20, ge=1, le=1000, description="variants the gate draws of each parameterised problem at upload"
    )
    variant_timeout_s: float = Field(
        default=5.0, gt=0, le=120, description="the longest one call of a problem's generator may run (in its checker)"
    )
    grading_heartbeat_s: float = Field(
        default=10.0,
        gt=0,
        description="a grading worker renews its job's lease this often, for three beats: a worker that stops (it "
        "died, on any host) loses the job to another after three",
    )
    grade_answers_inline: bool = Field(
        default=True,
        description="grade fill-in answers in the API process and store them graded (never queued), with or "
        "without a broker; false sends every submission through the workers",
    )
    max_grading_attempts: int = Field(default=3, ge=1, description="internal errors are retried this often")
    min_free_disk_bytes: int = Field(
        default=64 << 20, ge=0, description="writes are refused with 507 while the data dir has less free; 0: off"
    )
    http_max_connections: int | None = Field(
        default=None, ge=1, description="HTTP connections held at once; default and cap: the open-file limit less 512"
    )
    http_header_timeout_s: float = Field(
        default=10.0, gt=0, description="a request head must arrive within this, however slowly it trickles in"
    )
    http_body_timeout_s: float = Field(default=120.0, gt=0, description="a request body must arrive within this")
    http_keep_alive_s: int = Field(default=5, ge=1, description="an idle keep-alive connection is closed after this")
    http_backlog: int = Field(default=2048, ge=1, description="listen() backlog (the kernel caps it at somaxconn)")
    secure_cookies: bool = Field(default=False, description="send the session cookie over HTTPS only")
    rate_limits: bool = Field(default=True, description="false turns every rate limit off (benchmarks)")
    rate_submissions_per_user: int = Field(default=60, ge=0, description="per window; 0 = no limit")
    rate_submissions_per_token: int = Field(default=30, ge=0, description="per window; 0 = no limit")
    rate_submission_window_s: int = Field(default=60, ge=1, le=86400)
    rate_logins_per_account: int = Field(default=10, ge=0, description="login attempts per window; 0 = no limit")
    rate_logins_per_address: int = Field(default=50, ge=0, description="login attempts per window; 0 = no limit")
    rate_login_window_s: int = Field(default=300, ge=1, le=86400)
    password_checks: int | None = Field(
        default=None, ge=1, le=1024, description="password checks (argon2) at once; default: two per CPU core"
    )
    rate_unauthenticated_per_address: int = Field(
        default=300, ge=0, description="requests to /invite, /lti/login and /lti/launch per window; 0 = no limit"
    )
    rate_unauthenticated_window_s: int = Field(default=60, ge=1, le=86400)
    worker_metrics_port: int | None = Field(
        default=None, ge=1, le=65535, description="`autograder worker` serves /metrics on this port (no token)"
    )
    worker_metrics_host: str = Field(default="127.0.0.1", description="the interface of worker_metrics_port")
    worker_nice: int = Field(
        default=0,
        ge=0,
        le=19,
        description="`autograder worker` runs at this nice value (and, leading its own session, its autogroup too), "
        "so that on a host of its own the API's logins and requests come before gradings; 0: the API's priority. "
        "Beside other tenants' work a niced worker yields to them as well (app/worker/priority.py)",
    )
    webhook_allow_private: bool = Field(
        default=False, description="allow webhook targets in private and loopback ranges (CI on a private network)"
    )
    webhook_timeout_s: float = Field(default=10.0, gt=0, le=60, description="one delivery attempt's time limit")
    webhook_retry_delays_s: list[float] = Field(
        # Standard Webhooks' schedule: about a day in all; each delay gets +-20 % jitter.
        default=[5, 300, 1800, 7200, 18000, 36000, 36000],
        description="the waits before each retry; after the last, a delivery is marked failed",
    )
    webhook_poll_s: float = Field(default=1.0, gt=0, description="how often the sender looks for due deliveries")
    public_url: str = Field(
        default="http://127.0.0.1:8000",
        description="this service's address as browsers and LMSs reach it (the LTI URLs are built from it)",
    )
    lti_key_grace_s: int = Field(default=7 * 86400, ge=0, description="a rotated LTI key stays published this long")
    lti_clock_leeway_s: float = Field(
        default=60, ge=0, le=600, description="how far an LMS's clock may be off for an id_token's iat, nbf and exp"
    )
    lti_allow_http: bool = Field(
        default=False,
        description="development only: accept plain-http LMS URLs at registration (a test platform on 127.0.0.1)",
    )
    lti_passback_retry_delays_s: list[float] = Field(
        default=[10, 60, 300, 1800, 7200, 21600],
        description="the waits before each retry of an LTI grade passback (+-20 % jitter; Retry-After wins)",
    )
    smtp_host: str | None = Field(default=None, description="mail invitations through this server; none: show links")
    smtp_port: int = Field(default=587, ge=1, le=65535)
    smtp_from: str = Field(default="autograder@localhost", description="the From: of invitation mails")
    smtp_user: str | None = Field(default=None, description="log in to the SMTP server as this user")
    smtp_password: SecretStr | None = None
    smtp_starttls: bool = Field(default=True, description="upgrade the connection with STARTTLS before sending")
    smtp_timeout_s: float = Field(default=10.0, gt=0, le=120)
    invitation_valid_days: int = Field(default=7, ge=1, le=90, description="an invitation link expires after this")
    instructors_create_courses: bool = Field(
        default=True, description="an instructor of any offering may create courses (admins always may)"
    )
    log_format: Literal["json", "text"] = Field(
        default="json", description="json: one JSON object per line (app.logs); text: for a terminal"
    )
    session_cookie: str = "autograder_session"
    session_max_age_s: int = 14 * 24 * 3600

    @model_validator(mode="after")
    def _refuse_placeholders(self) -> Settings:
        key = self.secret_key.get_secret_value().strip().lower() if self.secret_key is not None else None
        if key is not None and key in PLACEHOLDER_SECRETS and not self.dev_mode:
            raise ValueError("AUTOGRADER_SECRET_KEY is a placeholder; set a random value or unset it")
        if self.sandbox == "unsafe-local" and not self.dev_mode:
            raise ValueError("AUTOGRADER_SANDBOX=unsafe-local is not a sandbox and needs AUTOGRADER_DEV_MODE=1")
        return self

    @property
    def job_lease_s(self) -> float:
        """How long a claim, and each renewal by the heartbeat, holds a job: three beats, at most the lease."""
        return min(self.grading_lease_s, 3 * self.grading_heartbeat_s)

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'autograder.db').resolve()}"

    def resolved_secret_key(self) -> str:
        """The configured key, else one generated on first use and kept (mode 0600) in the data dir."""
        if self.secret_key is not None:
            return self.secret_key.get_secret_value()
        path = self.data_dir / "secret_key"
        if not path.exists():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.write_text(secrets.token_urlsafe(48))
        return path.read_text().strip()


@lru_cache
def get_settings() -> Settings:
    return Settings()
