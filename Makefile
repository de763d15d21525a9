# The two commands a newcomer needs: `make serve` and `make test`. Both do all the set-up on a fresh machine.
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: serve test lint typecheck pytest bench sandbox-deps browser-deps worker clean i18n

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev]'
	@touch $@

# bubblewrap isolates the sandbox; install it where apt is available and we are root, else say how.
sandbox-deps:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && apt-get install -y -qq bubblewrap) >/dev/null; \
	  else \
	    echo "WARNING: bubblewrap (bwrap) is missing: install it (Debian/Ubuntu: sudo apt-get install bubblewrap)"; \
	  fi; }

# The browser tests (tests/browser) drive Debian's chromium with Playwright (its own browser download needs the
# network); the CJK font makes the Chinese sets readable in screenshots. Installed as root with apt, else skipped.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei) >/dev/null; \
	  else \
	    echo "NOTE: chromium is missing, so the browser tests will skip (Debian/Ubuntu: sudo apt-get install chromium)"; \
	  fi; }

serve: $(STAMP) sandbox-deps
	$(BIN)/autograder serve --host $(HOST) --port $(PORT)

worker: $(STAMP) sandbox-deps
	$(BIN)/autograder worker

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo

typecheck: $(STAMP)
	$(BIN)/mypy

# Two processes: much of the suite waits on sandboxed children, servers and databases, so two share two cores
# well. Each module stays on one process (module fixtures start once); tests/conftest.py keeps the browser tests
# together. `make pytest PYTEST_ARGS=tests/web` runs one folder on one process.
PYTEST_ARGS ?= -n 2
pytest: $(STAMP) sandbox-deps browser-deps
	$(BIN)/pytest $(PYTEST_ARGS)

test: lint typecheck pytest

bench: $(STAMP) sandbox-deps
	$(BIN)/python -m bench.run_all

# The pages' translations (docs/pages.md: Languages): extract the strings of the templates and app/, merge them into
# each catalog (app/web/locale/<code>/LC_MESSAGES/messages.po), then check each compiles and is fully translated.
I18N := app/web/locale
i18n: $(STAMP)
	@mkdir -p build
	$(BIN)/pybabel -q extract -F $(I18N)/babel.cfg --no-location --sort-output --no-wrap --project autograder \
	  -o build/messages.pot .
	$(BIN)/pybabel -q update -i build/messages.pot -d $(I18N) --no-wrap --ignore-obsolete --ignore-pot-creation-date
	$(BIN)/python -m app.web.i18n

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build/browser-screenshots
