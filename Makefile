# Two commands do everything on a fresh machine:
#   make demo   sets up .venv (Python >= 3.12) and runs `cellspec demo`
#   make test   sets up .venv with the test extras and runs the whole test suite
PYTHON ?= $(shell command -v python3.12 || command -v python3)
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test setup docs clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else "cellspec_sc needs Python >= 3.12 (found " + sys.version.split()[0] + ")")'
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/cellspec demo

test: $(STAMP)
	$(VENV)/bin/python -m pytest -n 2 --dist loadfile

docs: $(STAMP)
	$(VENV)/bin/python -m cellspec_sc.docgen

clean:
	rm -rf $(VENV) demo-output
