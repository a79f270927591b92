"""The model-file convention: roofline.graph.loading.load_model_file."""

from __future__ import annotations

import resource
import sys
import textwrap
import time

import pytest
from torch import nn

from roofline.errors import ModelFileError, RooflineError
from roofline.graph.loading import LoadedModel, load_model_file


def write(tmp_path, name: str, source: str):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def load_error(path, **kw) -> str:
    with pytest.raises(ModelFileError) as info:
        load_model_file(path, **kw)
    message = str(info.value)
    assert "\n" not in message, message
    assert "Traceback" not in message
    assert isinstance(info.value, RooflineError)
    return message


# ------------------------------------------------------------------------------------------
# the two conventions


def test_attributes_convention_builds_on_meta(tmp_path):
    path = write(
        tmp_path,
        "mlp.py",
        """
        import torch
        from torch import nn
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        example_inputs = (torch.randn(3, 4),)
        """,
    )
    loaded = load_model_file(path)
    assert isinstance(loaded, LoadedModel)
    assert loaded.name == "mlp"
    assert loaded.path == path.resolve()
    assert loaded.materialized is False
    assert loaded.convention == "attributes"
    assert loaded.warnings == []
    assert isinstance(loaded.model, nn.Sequential)
    assert all(p.is_meta for p in loaded.model.parameters())
    assert isinstance(loaded.args, tuple) and len(loaded.args) == 1
    assert loaded.args[0].shape == (3, 4)
    assert loaded.module.model is loaded.model


def test_functions_convention_and_extras(tmp_path):
    path = write(
        tmp_path,
        "fns.py",
        """
        import torch
        from torch import nn
        def get_model():
            return nn.Linear(4, 4)
        def get_example_inputs():
            return (torch.randn(2, 4), 3)
        def sweep():
            yield "a", get_model(), get_example_inputs()
        """,
    )
    loaded = load_model_file(path)
    assert loaded.convention == "functions"
    assert isinstance(loaded.model, nn.Linear) and loaded.model.weight.is_meta
    assert loaded.args[1] == 3
    assert callable(loaded.module.sweep)


def test_materialize_builds_real_tensors(tmp_path):
    path = write(
        tmp_path,
        "real.py",
        """
        import torch
        model = torch.nn.Linear(4, 4)
        example_inputs = (torch.randn(2, 4),)
        """,
    )
    loaded = load_model_file(path, materialize=True)
    assert loaded.materialized is True
    assert not loaded.model.weight.is_meta
    assert loaded.args[0].device.type == "cpu"
    # the materializer of a real load returns the same objects
    model, inputs, kwargs = loaded.materializer()()
    assert model is loaded.model and inputs is loaded.args and kwargs is loaded.kwargs


def test_materializer_of_meta_load_returns_real_model(tmp_path):
    path = write(
        tmp_path,
        "m.py",
        """
        import torch
        model = torch.nn.Linear(4, 4)
        example_inputs = (torch.randn(2, 4),)
        """,
    )
    loaded = load_model_file(path)
    model, inputs, kwargs = loaded.materializer()()
    assert not model.weight.is_meta and not inputs[0].is_meta and kwargs == {}


@pytest.mark.parametrize(
    "inputs, expected_len",
    [("torch.randn(2, 4)", 1), ("[torch.randn(2, 4), torch.randn(2, 4)]", 2), ("()", 0)],
)
def test_example_inputs_normalised_to_tuple(tmp_path, inputs, expected_len):
    path = write(
        tmp_path,
        "norm.py",
        f"""
        import torch
        model = torch.nn.Identity()
        example_inputs = {inputs}
        """,
    )
    loaded = load_model_file(path)
    assert isinstance(loaded.args, tuple)
    assert len(loaded.args) == expected_len


def test_plain_function_model(tmp_path):
    path = write(
        tmp_path,
        "fn.py",
        """
        import torch
        def model(x, y):
            return torch.sin(x) @ y
        example_inputs = (torch.randn(2, 3), torch.randn(3, 4))
        """,
    )
    loaded = load_model_file(path)
    assert callable(loaded.model) and not isinstance(loaded.model, nn.Module)
    assert loaded.args[0].is_meta


def test_meta_failure_retries_materialized_with_warning(tmp_path):
    path = write(
        tmp_path,
        "values.py",
        """
        import torch
        w = torch.randn(4)
        if w.abs().sum() >= 0:   # needs values at import: fails on meta
            scale = 2.0
        model = torch.nn.Linear(4, 4)
        example_inputs = (torch.randn(2, 4),)
        """,
    )
    loaded = load_model_file(path)
    assert loaded.materialized is True
    assert not loaded.model.weight.is_meta
    assert len(loaded.warnings) == 1
    warning = loaded.warnings[0]
    assert "values.py:4" in warning and "meta" in warning and "\n" not in warning


def test_sibling_import(tmp_path):
    write(tmp_path, "pkg/helpers.py", "WIDTH = 6\n")
    path = write(
        tmp_path,
        "pkg/uses_helper.py",
        """
        import torch
        from helpers import WIDTH
        model = torch.nn.Linear(WIDTH, 2)
        example_inputs = (torch.randn(1, WIDTH),)
        """,
    )
    loaded = load_model_file(path)
    assert loaded.model.in_features == 6
    assert str(path.parent) not in sys.path
    sys.modules.pop("helpers", None)


def test_same_stem_twice_does_not_clash(tmp_path):
    a = write(
        tmp_path,
        "a/model.py",
        """
        import torch
        class Net(torch.nn.Module):
            def forward(self, x):
                return x + 1
        model = Net()
        example_inputs = (torch.randn(2),)
        WHO = "a"
        """,
    )
    b = write(
        tmp_path,
        "b/model.py",
        """
        import torch
        class Net(torch.nn.Module):
            def forward(self, x):
                return x * 2
        model = Net()
        example_inputs = (torch.randn(3),)
        WHO = "b"
        """,
    )
    la, lb, la2 = load_model_file(a), load_model_file(b), load_model_file(a)
    assert (la.module.WHO, lb.module.WHO) == ("a", "b")
    assert la.name == lb.name == "model"
    names = {la.module.__name__, lb.module.__name__, la2.module.__name__}
    assert len(names) == 3
    assert all(sys.modules[n] is m for n, m in zip(
        [la.module.__name__, lb.module.__name__], [la.module, lb.module]))
    assert type(la.model) is not type(lb.model)
    assert la.args[0].shape == (2,) and lb.args[0].shape == (3,)


def test_billion_parameter_model_loads_without_memory(tmp_path):
    path = write(
        tmp_path,
        "big.py",
        """
        import torch
        from torch import nn
        # 4 x 16384 x 16384 = 1.07e9 parameters: 4.3 GB if materialised in float32
        model = nn.Sequential(*[nn.Linear(16384, 16384, bias=False) for _ in range(4)])
        example_inputs = (torch.randn(8, 16384),)
        """,
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    start = time.perf_counter()
    loaded = load_model_file(path)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    n_params = sum(p.numel() for p in loaded.model.parameters())
    assert n_params == 4 * 16384 * 16384
    assert all(p.is_meta for p in loaded.model.parameters())
    assert elapsed < 5.0
    assert (after - before) < 300 * 1024  # peak RSS grew by less than 300 MB


# ------------------------------------------------------------------------------------------
# errors: one line, the right type, what to do


def test_file_not_found(tmp_path):
    msg = load_error(tmp_path / "nope.py")
    assert "not found" in msg and "nope.py" in msg and "get_model()" in msg


def test_not_a_python_file(tmp_path):
    path = write(tmp_path, "model.txt", "model = 1\n")
    msg = load_error(path)
    assert "not a Python file" in msg and ".py" in msg


def test_directory(tmp_path):
    msg = load_error(tmp_path)
    assert "directory" in msg


def test_syntax_error_names_file_and_line(tmp_path):
    path = write(
        tmp_path,
        "broken.py",
        """\
        import torch
        model = torch.nn.Linear(2, 2)
        example_inputs = (torch.randn(1, 2),
        def oops(:
        """,
    )
    msg = load_error(path)
    assert msg.startswith("broken.py:")
    assert "syntax error" in msg
    line = int(msg.split(":")[1])
    assert line in (3, 4)


def test_exception_while_running_file(tmp_path):
    path = write(
        tmp_path,
        "raises.py",
        """\
        import torch

        def helper():
            raise ValueError("bad width\\nsecond line")

        model = torch.nn.Linear(2, 2)
        helper()
        example_inputs = (torch.randn(1, 2),)
        """,
    )
    msg = load_error(path)
    assert msg.startswith("raises.py:4"), msg  # the innermost line in the user's file
    assert "ValueError: bad width;" in msg  # the exception's first line only


def test_exception_in_get_model(tmp_path):
    path = write(
        tmp_path,
        "getfail.py",
        """\
        import torch
        def get_model():
            return torch.nn.Linear(2, 2, bogus=True)
        def get_example_inputs():
            return (torch.randn(1, 2),)
        """,
    )
    msg = load_error(path)
    assert msg.startswith("getfail.py:3") and "get_model()" in msg and "TypeError" in msg


def test_neither_convention(tmp_path):
    path = write(
        tmp_path,
        "nothing.py",
        """
        import torch
        class Net(torch.nn.Module):
            pass
        def build():
            return Net()
        net = build()
        """,
    )
    msg = load_error(path)
    assert "nothing.py defines neither `model` + `example_inputs` nor `get_model()` + " \
           "`get_example_inputs()`" in msg
    assert "define one pair" in msg
    assert "Net" in msg and "build" in msg and "net" in msg
    assert "torch" not in msg.split("it defines:")[1]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import torch\nmodel = torch.nn.Linear(2, 2)\n", "`example_inputs`"),
        ("import torch\nexample_inputs = (torch.randn(2),)\n", "not `model`"),
        ("def get_model():\n    return None\n", "`get_example_inputs()`"),
    ],
)
def test_half_a_convention(tmp_path, source, expected):
    path = write(tmp_path, "half.py", source)
    msg = load_error(path)
    assert expected in msg


def test_example_inputs_as_keywords(tmp_path):
    path = write(
        tmp_path,
        "kw.py",
        """
        import torch
        model = torch.nn.Bilinear(4, 5, 3)
        example_inputs = {"input1": torch.randn(2, 4), "input2": torch.randn(2, 5)}
        """,
    )
    loaded = load_model_file(path)
    assert loaded.args == () and set(loaded.kwargs) == {"input1", "input2"}
    assert loaded.kwargs["input1"].is_meta and loaded.kwargs["input2"].shape == (2, 5)


def test_example_inputs_keys_must_be_argument_names(tmp_path):
    path = write(tmp_path, "badkw.py", "import torch\nmodel = torch.nn.Identity()\nexample_inputs = {0: torch.randn(2)}\n")
    msg = load_error(path)
    assert "0" in msg and "argument name" in msg


@pytest.mark.parametrize("value, type_name", [("3", "int"), ("None", "NoneType")])
def test_example_inputs_wrong_type(tmp_path, value, type_name):
    path = write(
        tmp_path,
        "badinputs.py",
        f"""
        import torch
        model = torch.nn.Identity()
        example_inputs = {value}
        """,
    )
    msg = load_error(path)
    assert "example_inputs" in msg and "tuple" in msg and "dict" in msg and type_name in msg


def test_model_not_callable(tmp_path):
    path = write(tmp_path, "notcallable.py", "model = 3\nexample_inputs = ()\n")
    msg = load_error(path)
    assert "nn.Module or a callable" in msg and "int" in msg


def test_a_missing_package_says_what_to_install(tmp_path):
    path = write(tmp_path, "needs.py", "import not_a_package_anyone_has\nmodel = None\n")
    msg = load_error(path)
    assert "No module named 'not_a_package_anyone_has'" in msg and "pip install not_a_package_anyone_has" in msg
