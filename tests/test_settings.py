"""``cs.settings``: verbosity, progress bars on or off and the size from which a bar appears, for the process."""

import pytest

import cellspec_sc as cs
from cellspec_sc.progress import progress, set_verbosity, shows_bar
from test_progress import run_on_terminal

WRITE_WITH_SETTINGS = """
import sys, cellspec_sc as cs
exec(sys.argv[1])
cs.write(cs.example(n_cells=3000), sys.argv[2])
"""


@pytest.fixture(autouse=True)
def _restored():
    with cs.settings.override():
        yield


@pytest.mark.parametrize(("change", "bar"), [
    ("", False),                                        # 3,000 x 19 values: below 20 million
    ("cs.settings.quiet_below = 1000", True),           # the threshold is a setting
    ("cs.settings.verbosity = 'verbose'", True),
    ("cs.settings.verbosity = 'verbose'; cs.settings.progress_bars = False", False),
    ("cs.settings.quiet_below = 1000; cs.settings.verbosity = 'quiet'", False),
])
def test_settings_decide_the_bars_on_a_terminal(tmp_path, change, bar):
    code, shown = run_on_terminal(["-c", WRITE_WITH_SETTINGS, change, str(tmp_path / "a")])
    assert code == 0
    assert ("writing cells.parquet:" in shown) == bar, shown


def test_settings_read_back_and_restore():
    assert (cs.settings.verbosity, cs.settings.progress_bars, cs.settings.quiet_below) == ("normal", True, 20_000_000)
    with cs.settings.override(verbosity="verbose", quiet_below=10):
        assert shows_bar(1) and cs.settings.quiet_below == 10
        assert repr(cs.settings) == "settings(verbosity='verbose', progress_bars=True, quiet_below=10)"
    assert cs.settings.verbosity == "normal" and not shows_bar(19_999_999) and shows_bar(20_000_000)
    assert set_verbosity("quiet") == "normal"  # the older function forwards to the settings
    assert cs.settings.verbosity == "quiet"


def test_progress_bars_off_wins_over_a_callers_show():
    cs.settings.progress_bars = False
    with progress(5, "counting", show=True) as bar:
        bar.update(5)
    assert bar.disable


@pytest.mark.parametrize(("name", "value", "message"), [
    ("verbosity", "loud", "settings.verbosity must be one of 'quiet', 'normal', 'verbose', not 'loud'"),
    ("progress_bars", "no", "settings: progress_bars must be True or False, not 'no'"),
    ("quiet_below", -5, "settings: quiet_below must be an integer >= 0 (table values), not -5"),
])
def test_bad_settings_are_refused_by_name(name, value, message):
    with pytest.raises(ValueError) as refused:
        setattr(cs.settings, name, value)
    assert str(refused.value) == message and isinstance(refused.value, cs.InputError)
    with pytest.raises(cs.InputError, match="settings has no 'colour'"):
        with cs.settings.override(colour="red"):
            pass
