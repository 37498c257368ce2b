# Two commands: `make run` (set up, ingest the sample knowledge base, answer sample questions)
# and `make test` (set up, lint, type-check, run the tests). Everything else is a helper.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
RAG := $(VENV)/bin/rag
STAMP := $(VENV)/.installed
KB ?= .rag/demo
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export RAGAS_DO_NOT_TRACK := true
export ANONYMIZED_TELEMETRY := False
export TOKENIZERS_PARALLELISM := false

.PHONY: install browser-deps ocr-deps office-deps postgres-deps nginx-deps run test lint typecheck pytest bench figures screenshots clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first: the pinned CPU build is on local disk; anything else pulls gigabytes of CUDA.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e ".[eval,dev,e5,train]"
	# bytecode for the checkout, as a wheel install has it (an editable install compiles none)
	$(PY) -m compileall -q rag_app
	@touch $(STAMP)

install: $(STAMP)

# Headless Chromium for tests/service/test_browser.py (Playwright drives Debian's build; never
# `playwright install`). Needs root for apt-get; otherwise the browser test skips itself.
browser-deps:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && apt-get install -y --no-install-recommends chromium; \
	else \
		echo "browser-deps: /usr/bin/chromium missing and not root; skipping (the browser test will skip)"; \
	fi

# OCR and CJK text rendering: OpenCV's system libraries (libGL, GLib) for rapidocr's cv2, and a
# CJK font (WenQuanYi Zen Hei) for the scanned-PDF tests' rendered Chinese and for `rag eval`'s
# plots. Needs root for apt-get; otherwise OCR reports itself unavailable and those tests skip.
ocr-deps:
	@if fc-list :lang=zh 2>/dev/null | grep -q . && ldconfig -p | grep -q 'libGL.so.1 '; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			fonts-wqy-zenhei fontconfig libgl1 libglib2.0-0; \
	else \
		echo "ocr-deps: no CJK font or libGL and not root; skipping (OCR/plot tests will skip)"; \
	fi

# LibreOffice (Writer and Impress without the GUI: 60 Debian packages, 91 MB to download, 280 MB
# on disk, ~30 s) converts legacy .doc/.ppt to .docx/.pptx (rag_app/readers/legacy_office.py).
# Needs root for apt-get; otherwise a .doc/.ppt fails with a reason naming this target and the
# LibreOffice tests skip.
office-deps:
	@if command -v soffice >/dev/null 2>&1 || command -v libreoffice >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			libreoffice-writer-nogui libreoffice-impress-nogui; \
	else \
		echo "office-deps: no soffice/libreoffice and not root; skipping (.doc/.ppt fail with a reason, their tests skip)"; \
	fi

# PostgreSQL server binaries for the PostgreSQL half of tests/store/test_ledger.py: the tests
# start (initdb + pg_ctl, as the postgres user when root) and stop a throwaway server themselves.
# Needs root for apt-get; otherwise the PostgreSQL tests skip themselves.
postgres-deps:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql; \
	else \
		echo "postgres-deps: no /usr/lib/postgresql/*/bin/initdb and not root; skipping (the PostgreSQL tests will skip)"; \
	fi

# nginx (Debian's nginx-light) for tests/service/test_nginx_proxy.py, which starts the reverse-proxy
# recipe of deploy/nginx.conf on a free port (a temporary prefix, not as a service) in front of
# a test server and stops it. Needs root for apt-get; otherwise that test skips itself.
nginx-deps:
	@if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nginx-light; \
	else \
		echo "nginx-deps: no nginx and not root; skipping (the reverse-proxy test will skip)"; \
	fi

# `make run`: ingest the sample KB, answer four questions, print a demo API key, then serve the
# UI + API on http://$(HOST):$(PORT)/ until Ctrl-C. `make run SERVE=0` stops after the answers.
HOST ?= 127.0.0.1
PORT ?= 8000
SERVE ?= 1
run: install ocr-deps
	$(RAG) ingest data/knowledge --kb $(KB)
	$(RAG) docs --kb $(KB)
	$(RAG) ask "密码多久需要修改一次？" --kb $(KB)
	$(RAG) ask "30岁男性选择20年交，每万元保额的年交保费是多少？" --kb $(KB)
	$(RAG) ask "星河知识库服务默认监听哪个端口？" --kb $(KB)
	$(RAG) ask "星河知识库服务的 Docker 镜像名称是什么？" --kb $(KB)
ifeq ($(SERVE),1)
	@echo "Demo API key (tenant 'default', role editor) - paste it into the UI:"
	@$(RAG) keys create --tenant default --role editor --name demo --kb $(KB)
	@echo "UI: http://$(HOST):$(PORT)/   API docs: http://$(HOST):$(PORT)/docs   (Ctrl-C stops)"
	$(RAG) serve --kb $(KB) --host $(HOST) --port $(PORT)
endif

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy rag_app pipelines training

pytest: install browser-deps ocr-deps office-deps postgres-deps nginx-deps
	$(VENV)/bin/pytest -q

test: lint typecheck pytest

# The UI screenshots in docs/img/ (referenced from docs/formats.md), taken by the browser test.
screenshots: install browser-deps ocr-deps
	RAG_SCREENSHOTS=1 $(VENV)/bin/pytest -q tests/service/test_browser.py

# `make bench`: one quick run of every benchmark script in benchmarks/ (the commands behind the
# published figures are in docs/benchmarks.md). All but service_load.py need the shared dev data
# (../shared/data, or RAG_SHARED_DATA) and print "skipped" without it. The first run builds the
# cached KBs in benchmarks/.cache/ (embedding the dev sets: tens of minutes); later runs take minutes.
# chunking, latency and the answer model's report run at their published size and rewrite their file in
# benchmarks/results/; the others run smaller and write to $(BENCH_OUT)/ (not committed).
BENCH_OUT := benchmarks/.cache/bench
bench: install
	$(PY) benchmarks/quality/chunking.py
	$(PY) benchmarks/performance/latency.py
	$(PY) benchmarks/quality/retrieval.py --limit 50 --configs structure_keyword structure_engine \
		--name ../.cache/bench/retrieval
	$(PY) benchmarks/quality/answer_data.py
	$(PY) benchmarks/quality/fit_answer_model.py --no-write
	$(PY) benchmarks/quality/answer_bootstrap.py --replicates 1 --json $(BENCH_OUT)/answer_bootstrap.json
	$(PY) benchmarks/performance/query_scale.py --sizes 5000 --queries 50 --prewarm --label bench \
		--json $(BENCH_OUT)/query_scale.json
	$(PY) benchmarks/performance/ledger_writes.py --sizes 5000 --files 10 --label bench \
		--json $(BENCH_OUT)/ledger_writes.json
	$(PY) benchmarks/performance/ingest_throughput.py --mb 0.5 --repeat 1 --label bench \
		--json $(BENCH_OUT)/ingest_throughput.json
	$(PY) benchmarks/performance/memory.py --sizes 5 --real-model-size 0 --json $(BENCH_OUT)/memory.json
	$(PY) benchmarks/performance/service_load.py --clients 2 --duration 10 --drain 30 \
		--json $(BENCH_OUT)/service_load.json

# the README's performance figures: measured on today's code, and the text the results files give?
# (exit 1 when one is stale or differs; figures.py --write rewrites the README's cells from the results)
figures: install
	$(PY) benchmarks/performance/figures.py --check

clean:
	rm -rf .rag .pytest_cache .mypy_cache .ruff_cache
