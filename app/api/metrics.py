"""GET /metrics: Prometheus text format, for a token with the `metrics` scope only (it names routes and volumes)."""

from __future__ import annotations

import os

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess

from app.deps import PrincipalDep
from app.metrics.queue import QueueCollector

router = APIRouter(tags=["ops"])


def process_registry() -> CollectorRegistry:
    """Every process's values when PROMETHEUS_MULTIPROC_DIR is set (several workers), else this process's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


@router.get("/metrics", response_class=Response)
def metrics(request: Request, principal: PrincipalDep) -> Response:
    """Prometheus metrics (docs/operations.md, "Metrics"): needs a token with the `metrics` scope."""
    principal.require("metrics")
    queue = CollectorRegistry(auto_describe=False)
    queue.register(QueueCollector(request.app.state.session_factory))
    body = generate_latest(process_registry()) + generate_latest(queue)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
