# One image for both roles: `autograder serve` (api) and `autograder worker`.
FROM python:3.11-slim-bookworm

# bubblewrap isolates student code; procps gives the worker healthcheck pgrep.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap procps \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /srv/autograder
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    AUTOGRADER_DATA_DIR=/var/lib/autograder

# Dependencies first, so code changes do not reinstall torch. For CPU-only images pass
# --build-arg PIP_EXTRA_INDEX_URL=<your PyTorch CPU wheel index>; constraints.txt pins torch either way.
ARG PIP_EXTRA_INDEX_URL=""
COPY pyproject.toml constraints.txt README.md ./
COPY app/__init__.py app/__init__.py
COPY graders/__init__.py graders/__init__.py
COPY checklibs/__init__.py checklibs/__init__.py
RUN pip install --no-cache-dir -c constraints.txt -e .

COPY app app
COPY graders graders
COPY checklibs checklibs
COPY migrations migrations
COPY problems problems

RUN mkdir -p /var/lib/autograder
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"
CMD ["autograder", "serve", "--host", "0.0.0.0", "--port", "8000"]
