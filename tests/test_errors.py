"""Errors and warnings users can catch: every refusal a CellspecError (InputError also a ValueError, a missing path
also a FileNotFoundError), every warning a CellspecWarning, all exported from ``cellspec_sc``."""

import importlib
import inspect
import pickle
import warnings

import pytest

import cellspec_sc as cs
from cellspec_sc import errors

# every module that defines an exception or warning class (imported, so that the classes exist)
DEFINING = ["cellspec_sc.errors", "cellspec_sc.io._refusals", "cellspec_sc.io._outlines", "cellspec_sc.readers._table",
            "cellspec_sc.bridges.anndata._keys", "cellspec_sc.bridges.spatialdata._record",
            "cellspec_sc.cohort._run", "cellspec_sc.model._methods"]


def _classes(base: type) -> list[type]:
    for name in DEFINING:
        importlib.import_module(name)
    found, todo = [], [base]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("cellspec_sc"):
                found.append(sub)
    return found


def test_every_warning_class_derives_from_cellspec_warning():
    mine = _classes(Warning)
    names = {c.__name__ for c in mine}
    assert {"ReaderWarning", "UnlistedFileWarning", "OutlineWarning", "AnnDataBridgeWarning",
            "SpatialDataBridgeWarning"} <= names
    for cls in mine:
        assert issubclass(cls, cs.CellspecWarning) and issubclass(cls, UserWarning), cls


def test_the_errors_are_exported_with_their_bases():
    assert cs.CellspecWarning is errors.CellspecWarning and cs.MissingPath is errors.MissingPath
    for cls in (cs.InputError, cs.MissingPath, errors.ReadOnlyError, errors.Unstorable):
        assert issubclass(cls, ValueError) and issubclass(cls, cs.CellspecError), cls
    assert issubclass(cs.MissingPath, FileNotFoundError) and issubclass(cs.MissingPath, cs.InputError)
    for _, cls in inspect.getmembers(errors, inspect.isclass):
        if issubclass(cls, Exception) and cls.__module__ == errors.__name__ \
                and not issubclass(cls, Warning):
            assert issubclass(cls, cs.CellspecError), cls


def test_a_missing_path_is_a_file_not_found_error_everywhere(tmp_path):
    gone = tmp_path / "gone"
    calls = {"read": lambda: cs.read(gone), "read_qupath": lambda: cs.read_qupath(gone / "m.tsv"),
             "read_mcmicro": lambda: cs.read_mcmicro(gone / "t.csv"), "read_steinbock": lambda: cs.read_steinbock(gone),
             "read_halo": lambda: cs.read_halo(gone / "h.csv", pixel_size=0.5),
             "read_inform": lambda: cs.read_inform(gone / "cell_seg_data.txt", pixel_size=0.5),
             "read_cellprofiler": lambda: cs.read_cellprofiler(gone / "Cells.csv", pixel_size=0.5),
             "read_export": lambda: cs.read_export(gone / "t.csv")}
    for name, call in calls.items():
        with pytest.raises(FileNotFoundError) as missing:
            call()
        err = missing.value
        assert isinstance(err, cs.CellspecError), name
        assert str(gone) in str(err) and err.filename.startswith(str(gone)) and err.errno == 2, (name, str(err))
        assert "[Errno" not in str(err), name  # the refusal's own message, not OSError's form
    with pytest.raises(cs.FormatError):  # a cellspec directory that is missing is still a format refusal
        cs.read(gone)


def test_missing_path_survives_pickling():
    err = pickle.loads(pickle.dumps(cs.MissingPath("/data/x.tsv", "/data/x.tsv: no such file")))
    assert isinstance(err, FileNotFoundError) and str(err) == "/data/x.tsv: no such file"
    assert err.filename == "/data/x.tsv"


@pytest.mark.parametrize(("arguments", "named"), [
    ({"n_cells": -1}, "n_cells"), ({"n_cells": 2.5}, "n_cells"), ({"seed": -1}, "seed"), ({"n_images": 0}, "n_images"),
    ({"n_samples": 3}, "n_samples"), ({"n_features": 2}, "n_features"), ({"pixel_size": 0}, "pixel_size"),
    ({"pixel_size": float("nan")}, "pixel_size"), ({"markers": "CD3"}, "markers"), ({"markers": ["a", "a"]}, "markers"),
    ({"region_layers": "tumour"}, "region_layers"), ({"adjacency": "yes"}, "adjacency"),
])
def test_example_refuses_bad_arguments_by_name(arguments, named):
    with pytest.raises(ValueError, match=f"^example: {named} must be ") as refused:
        cs.example(**arguments)
    assert isinstance(refused.value, cs.InputError)


def test_example_takes_the_edges_it_can_simulate():
    assert cs.example(n_cells=0, n_images=0).shape == (0, 19)
    assert cs.example(n_cells=1, n_images=1, n_features=3).shape == (1, 3)


@pytest.mark.parametrize(("reader", "arguments", "named"), [
    ("read_qupath", {"pixel_size": -1}, "pixel_size"), ("read_qupath", {"pixel_size": True}, "pixel_size"),
    ("read_qupath", {"pixel_size": "0.5"}, "pixel_size"), ("read_qupath", {"pixel_size": {"img": 0}}, "pixel_size"),
    ("read_qupath", {"image_id": ""}, "image_id"), ("read_qupath", {"object_types": "Cell"}, "object_types"),
    ("read_qupath", {"marker_map": ["CD3"]}, "marker_map"), ("read_mcmicro", {"sample_id": 3}, "sample_id"),
    ("read_mcmicro", {"strict": "yes"}, "strict"), ("read_steinbock", {"neighbors": 1}, "neighbors"),
    ("read_steinbock", {"pixel_size": float("inf")}, "pixel_size"), ("read_halo", {"pixel_size": 0}, "pixel_size"),
    ("read_halo", {"image_id": 7}, "image_id"), ("read_inform", {"marker_map": "CD3"}, "marker_map"),
    ("read_cellprofiler", {"neighbors": "no"}, "neighbors"), ("read_cellprofiler", {"sample_id": ""}, "sample_id"),
])
def test_readers_refuse_bad_arguments_by_name_before_reading(tmp_path, reader, arguments, named):
    with pytest.raises(ValueError, match=f"^{reader}: {named} must be ") as refused:
        getattr(cs, reader)(tmp_path / "not read", **arguments)  # refused before the missing file is noticed
    assert isinstance(refused.value, cs.InputError)


def test_warnings_can_be_silenced_through_the_one_base():
    adata = cs.to_anndata(cs.example())
    adata.obsm["X_pca"] = adata.X[:, :2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=cs.CellspecWarning)
        assert cs.from_anndata(adata).n_cells == 80


def _warn_categories(path) -> list[str]:
    """The category names of every ``warnings.warn(...)`` call in the file at ``path`` ("" when none is given)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "warnings.warn":
            given = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "category"), None)
            found.append("" if given is None else ast.unparse(given))
    return found


def test_no_warning_is_issued_as_a_bare_python_category():
    """Every ``warnings.warn`` of the package names a CellspecWarning subclass, never ``UserWarning`` itself."""
    from pathlib import Path

    root = Path(cs.__file__).resolve().parent
    sources = list(root.rglob("*.py"))
    if not (root / "bridges").exists():  # in a checkout bridges/ and widgets/ sit beside the package
        sources += [*(root.parent / "bridges").rglob("*.py"), *(root.parent / "widgets").rglob("*.py")]
    categories = {f"{p.name}: {c or 'no category'}" for p in sources for c in _warn_categories(p)}
    python_own = {c for c in categories if c.split(": ")[1] in ("no category", "UserWarning", "RuntimeWarning",
                                                                 "FutureWarning", "DeprecationWarning")}
    assert len(categories) >= 5 and not python_own, python_own
