import os
import pathlib

import pytest

import ebb  # noqa: F401  (PYTHONPATH=<build>/python; fails loudly when the module is missing)


def _models_dir() -> pathlib.Path:
    d = os.environ.get("EBB_TEST_MODELS")
    if not d:
        pytest.exit("EBB_TEST_MODELS is not set (run through ctest, or set it to build/debug/test-models)", 2)
    return pathlib.Path(d)


@pytest.fixture(scope="session")
def models_dir() -> pathlib.Path:
    return _models_dir()


@pytest.fixture(scope="session")
def tiny_path(models_dir) -> str:
    p = models_dir / "llama-tiny-fp32"
    assert (p / "genai_config.json").is_file(), f"missing test model {p} (ctest -R synth_test_models)"
    return str(p)


@pytest.fixture
def rt():
    return ebb.Runtime()


@pytest.fixture
def model(rt, tiny_path):
    with rt.load(tiny_path, id="tiny", session_options={"intra_op_num_threads": 1}) as m:
        yield m
