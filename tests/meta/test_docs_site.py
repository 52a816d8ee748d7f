"""The documentation site builds with warnings as errors (``make docs``), has a page for every public name (classes
with their methods), the CLI reference and every notebook as a tutorial with its stored pictures, and every
internal link and image of it resolves. About a minute: one build shared by the tests of this module."""

from __future__ import annotations

import inspect
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from meta.test_layers import PUBLIC_API

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# classes whose pages must document each public method
WITH_METHODS = {"cellspec_sc.CellSpec", "cellspec_sc.ValidationReport", "cellspec_sc.Cohort"}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", "docs",
                            str(out)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr[-5000:]
    return out


class Links(HTMLParser):
    """The ids, the hrefs and the image sources of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(found["id"])
        if tag == "a" and found.get("href"):
            self.hrefs.append(found["href"])
        if tag == "img" and found.get("src"):
            self.images.append(found["src"])


def parsed(page: Path) -> Links:
    links = Links()
    links.feed(page.read_text(encoding="utf-8"))
    return links


def test_every_public_name_has_a_page(site):
    missing = [f"{module}.{name}" for module, names in PUBLIC_API.items() for name in names
               if not (site / "generated" / f"{module}.{name}.html").is_file()]
    assert not missing, f"no API page for {missing}"


def test_class_pages_document_every_public_method(site):
    import cellspec_sc as cs

    for fullname in sorted(WITH_METHODS):
        cls = getattr(cs, fullname.rsplit(".", 1)[1])
        methods = {n for n, v in vars(cls).items() if not n.startswith("_") and (inspect.isfunction(v) or
                   isinstance(v, (property, classmethod, staticmethod)))}
        ids = parsed(site / "generated" / f"{fullname}.html").ids
        undocumented = sorted(m for m in methods if f"{fullname}.{m}" not in ids)
        assert len(methods) >= 5 and not undocumented, f"{fullname}: no entry for {undocumented}"


def test_function_pages_show_parameters_and_returns(site):
    text = (site / "generated" / "cellspec_sc.read.html").read_text(encoding="utf-8")
    assert "Parameters" in text and "Returns" in text and "lazy" in text


def test_the_cli_reference_lists_every_command(site):
    from cellspec_sc.cli.main import COMMANDS

    page = site / "cli.html"
    ids, text = parsed(page).ids, page.read_text(encoding="utf-8")
    assert not [name for name in COMMANDS if f"cellspec-{name}" not in ids]
    assert "--pixel-size" in text and "--overwrite" in text  # options of subcommands, not just their names


def stored_images(path: Path) -> int:
    nb = nbformat.read(path, as_version=4)
    return sum("image/png" in output.get("data", {}) for cell in nb.cells if cell.cell_type == "code"
               for output in cell.get("outputs", []))


def test_every_notebook_is_a_tutorial_with_its_stored_pictures(site):
    for notebook in NOTEBOOKS:
        page = site / "tutorials" / f"{notebook.stem}.html"
        assert page.is_file(), f"no tutorial page for {notebook.name}"
        images = [src for src in parsed(page).images if "_images/" in src or src.startswith("data:image/png")]
        assert len(images) >= stored_images(notebook), notebook.name
    assert stored_images(ROOT / "notebooks" / "preview.ipynb") >= 3  # each widget view as a picture


def test_every_internal_link_and_image_resolves(site):
    broken = []
    pages = sorted(site.rglob("*.html"))
    ids = {page: parsed(page) for page in pages}
    for page, links in ids.items():
        for target in [*links.hrefs, *links.images]:
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or target.startswith(("mailto:", "data:", "javascript:")):
                continue
            file = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if not file.exists():
                broken.append(f"{page.relative_to(site)}: {target}")
            elif parts.fragment and file.suffix == ".html" and file in ids and parts.fragment not in ids[file].ids:
                broken.append(f"{page.relative_to(site)}: {target} (no such anchor)")
    assert len(pages) > 50 and not broken, "\n".join(broken[:40])


def numpydoc_sections(obj) -> set[str]:
    """The numpydoc section titles of ``obj``'s docstring (a title line underlined with dashes)."""
    lines = (inspect.getdoc(obj) or "").splitlines()
    return {line.strip() for line, below in zip(lines, lines[1:], strict=False)
            if below.strip() and set(below.strip()) == {"-"} and len(below.strip()) == len(line.strip())}


def test_every_top_level_function_has_numpydoc_sections():
    """Parameters (when it takes any), Returns and Examples on each function of ``cellspec_sc``, as the site shows
    them; ruff's pydocstyle (numpy convention) checks their form on the whole public API."""
    import cellspec_sc as cs

    missing = {}
    for name in sorted(PUBLIC_API["cellspec_sc"]):
        obj = getattr(cs, name)
        if not inspect.isfunction(obj):
            continue
        needed = {"Returns", "Examples"} | ({"Parameters"} if inspect.signature(obj).parameters else set())
        if needed - numpydoc_sections(obj):
            missing[name] = sorted(needed - numpydoc_sections(obj))
    assert not missing, missing


# classes whose public methods and properties (their own and those they inherit from the package) carry numpydoc
# sections: module, class name
DOCUMENTED_CLASSES = [("cellspec_sc", "CellSpec"), ("cellspec_sc", "ValidationReport"),
                      ("cellspec_sc.cohort", "Cohort"), ("cellspec_sc.cohort", "CohortReport"),
                      ("cellspec_sc.cohort", "Failure"), ("cellspec_sc.widgets", "Preview"),
                      ("cellspec_sc.widgets", "SpaceView")]


def package_members(cls: type) -> dict[str, object]:
    """The public methods, properties, classmethods and staticmethods ``cls`` has from classes of the package
    (not those of a library base such as ipywidgets' ``VBox``), nearest definition first."""
    members: dict[str, object] = {}
    for klass in cls.__mro__:
        if not klass.__module__.startswith("cellspec_sc"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in members:
                continue
            if inspect.isfunction(value) or isinstance(value, (property, classmethod, staticmethod)):
                members[name] = value
    return members


def takes_parameters(member: object) -> bool:
    """Whether a method takes an argument besides ``self``/``cls`` (a property never does)."""
    if isinstance(member, property):
        return False
    function = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
    names = list(inspect.signature(function).parameters)
    return len(names) > (0 if isinstance(member, staticmethod) else 1)


def test_method_sections_are_found_only_where_written():
    """The helpers above: a method with an argument needs Parameters, a property never does."""
    class Probe:
        def with_argument(self, value: int) -> int:
            """Twice ``value``.

            Returns
            -------
            int
                The double.
            """
            return 2 * value

        @property
        def size(self) -> int:
            """One."""
            return 1

    assert takes_parameters(vars(Probe)["with_argument"]) and not takes_parameters(vars(Probe)["size"])
    assert numpydoc_sections(Probe.with_argument) == {"Returns"}
    assert numpydoc_sections(vars(Probe)["size"]) == set()


@pytest.mark.parametrize(("module", "name"), DOCUMENTED_CLASSES, ids=[n for _, n in DOCUMENTED_CLASSES])
def test_every_public_method_of_the_classes_has_numpydoc_sections(module, name):
    """Parameters (when it takes any besides ``self``), Returns and Examples on each public method and property
    of the package's classes, so that each entry of their API pages says what it takes, gives and how it is
    used."""
    import importlib

    cls = getattr(importlib.import_module(module), name)
    missing = {}
    for member_name, member in sorted(package_members(cls).items()):
        needed = {"Returns", "Examples"} | ({"Parameters"} if takes_parameters(member) else set())
        found = numpydoc_sections(member.__func__ if isinstance(member, (classmethod, staticmethod)) else member)
        if needed - found:
            missing[member_name] = sorted(needed - found)
    assert not missing, f"{module}.{name}: {missing}"


def test_validate_documents_what_it_raises():
    import cellspec_sc as cs

    assert "Raises" in numpydoc_sections(cs.validate)
