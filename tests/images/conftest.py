import pytest

import cellspec_sc as cs


@pytest.fixture(scope="session")
def imaged(tmp_path_factory):
    """A simulated section of 400 cells in 2 images with its images written: (object, folder of the OME-TIFFs)."""
    folder = tmp_path_factory.mktemp("images")
    return cs.example(n_cells=400, image_dir=folder), folder
