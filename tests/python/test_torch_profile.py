"""trnsim.torch.profile as a torch.profiler user meets it (docs/pytorch.md): an nn.Module
captured eagerly, its results against PyTorch's, the key_averages table against torch's own
_build_table and against a real torch.profiler run, the Chrome trace, the host fallback, graph
mode (fx_fuse) and bad input. Skipped where python3-torch is not installed."""
import json
import os
import re
import warnings

import pytest

torch = pytest.importorskip("torch")
import trnsim.torch as tt  # noqa: E402
from torch.autograd import DeviceType  # noqa: E402
from torch.autograd import profiler_util  # noqa: E402


class Small(torch.nn.Module):
    """RMSNorm, a Linear and a softmax: the memo's small model."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(64) + 0.5)
        self.lin = torch.nn.Linear(64, 32)

    def forward(self, x):
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
        return torch.softmax(self.lin(h), -1)


@pytest.fixture(scope="module")
def small():
    torch.manual_seed(0)
    return Small(), torch.randn(4, 8, 64)


@pytest.fixture(scope="module")
def small_profile(small, tmp_path_factory):
    m, x = small
    d = str(tmp_path_factory.mktemp("small"))
    with tt.profile(arch="trn2", out_dir=d) as prof:
        y = m(x)
    return prof, y


def test_an_eager_module_runs_each_aten_op_as_a_kernel_and_returns_torchs_result(small,
                                                                                small_profile):
    m, x = small
    prof, y = small_profile
    with torch.no_grad():
        expected = m(x)
    torch.testing.assert_close(y, expected, atol=1e-5, rtol=1e-4)
    ops = [op["name"] for op in json.load(open(prof.workload_path))["ops"]]
    for name in ("aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul",
                 "aten::addmm", "aten::_softmax"):
        assert name in ops
    # one launch per op that has a kernel: pow mean add rsqrt mul mul (matmul add) softmax
    assert prof.stats["host"]["kernel_launches"] == 9
    assert prof.device_time_us > 0 and prof.total_time_us > prof.device_time_us


def test_inference_mode_records_the_same_ops_as_no_grad(small, tmp_path):
    m, x = small
    with tt.profile(out_dir=str(tmp_path / "a"), report=False) as a:
        m(x)
    with torch.inference_mode():
        with tt.profile(out_dir=str(tmp_path / "b"), report=False) as b:
            m(x)
    ops = lambda p: [op["name"] for op in json.load(open(p.workload_path))["ops"]]  # noqa: E731
    assert ops(a) == ops(b)
    assert a.stats["host"]["device_time"] == b.stats["host"]["device_time"]


class _AsTorchRow:
    """A key_averages row as torch's FunctionEventAvg (kernel rows as DeviceType.CUDA)."""

    def __init__(self, e):
        for k in dir(e):
            if not k.startswith("_") and k != "device_type":
                setattr(self, k, getattr(e, k))
        self.device_type = DeviceType.CPU if e.device_type == "CPU" else DeviceType.CUDA
        self.cpu_parent = None


@pytest.mark.parametrize("sort_by,row_limit", [(None, 100), ("cuda_time_total", 5),
                                               ("self_cpu_time_total", -1), ("count", 0)])
def test_the_table_is_torchs_build_table_byte_for_byte(small_profile, sort_by, row_limit):
    prof, _ = small_profile
    mine = prof.key_averages()
    mine.device_name = "CUDA"  # torch 1.13 can only say CUDA
    theirs = profiler_util.EventList([_AsTorchRow(e) for e in mine])
    assert mine.table(sort_by=sort_by, row_limit=row_limit) == \
        theirs.table(sort_by=sort_by, row_limit=row_limit)


def _columns(line):
    return re.split(r"\s{2,}", line.strip())


def test_header_and_footer_match_a_real_torch_profiler_run(small, small_profile):
    m, x = small
    with torch.no_grad():
        m(x)  # warm-up
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as real:
            m(x)
    real_lines = real.key_averages().table(sort_by="cpu_time_total").splitlines()
    prof, _ = small_profile
    table = prof.key_averages().table(sort_by="device_time_total", row_limit=10)
    lines = table.splitlines()
    device_columns = ["Self device", "Self device %", "Device total", "Device time avg"]
    header = _columns(lines[1])
    assert header[6:10] == device_columns
    assert header[:6] + header[10:] == _columns(real_lines[1])
    # the rules: '-' * width + 2 spaces per column, above and below the header and the rows
    rule = re.compile(r"^(-+  )+$")
    for line in (lines[0], lines[2], lines[-3], real_lines[0], real_lines[2], real_lines[-2]):
        assert rule.match(line), line
    assert [len(c) for c in lines[0].split("  ")[1:-1]] == [12] * 10
    assert re.match(r"^Self CPU time total: -?\d+\.\d{3}(us|ms|s)$", real_lines[-1])
    assert re.match(r"^Self CPU time total: -?\d+\.\d{3}(us|ms|s)$", lines[-2])
    assert re.match(r"^Self device time total: \d+\.\d{3}(us|ms|s)$", lines[-1])
    assert table.endswith("\n")
    assert sum(e.self_device_time_total for e in prof.key_averages()
               if e.device_type != "CPU") == pytest.approx(prof.device_time_us, rel=1e-6)


def test_sort_by_takes_torch_2_and_torch_1_13_names(small_profile):
    prof, _ = small_profile
    ka = prof.key_averages()
    assert ka.table(sort_by="device_time_total") == ka.table(sort_by="cuda_time_total")
    with pytest.raises(AttributeError, match="no_such_column"):
        ka.table(sort_by="no_such_column")


def test_the_chrome_trace_has_framework_runtime_and_engine_lanes(small_profile, tmp_path):
    prof, _ = small_profile
    path = str(tmp_path / "trace.json")
    prof.export_chrome_trace(path)
    events = json.load(open(path))["traceEvents"]
    lanes = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert {"framework", "runtime", "Kernels", "TensorE", "VectorE", "ScalarE"} <= lanes
    names = {e["name"] for e in events if e.get("ph") == "X"}
    assert "aten::addmm" in names and "aten::_softmax" in names
    prof.export_report(str(tmp_path / "report.html"))
    assert os.path.getsize(str(tmp_path / "report.html")) > 1000


def _with_cumsum(x):
    return torch.cumsum(torch.exp(x), -1) * 2.0


def test_an_op_with_no_lowering_runs_on_the_host_and_is_reported_once(tmp_path):
    torch.manual_seed(1)
    x = torch.randn(64, 128)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tt.profile(out_dir=str(tmp_path), report=False) as prof:
            y = _with_cumsum(x)
            y2 = torch.cumsum(y, -1)
    host = [w for w in caught if issubclass(w.category, tt.HostFallbackWarning)]
    assert len(host) == 1
    assert "2 op call(s)" in str(host[0].message) and "aten::cumsum x2" in str(host[0].message)
    assert [n for n, _ in prof.host_ops] == ["aten::cumsum", "aten::cumsum"]
    torch.testing.assert_close(y, _with_cumsum(x))
    torch.testing.assert_close(y2, torch.cumsum(_with_cumsum(x), -1))
    keys = {e.key for e in prof.key_averages()}
    assert {"Memcpy DtoH (Device -> Host)", "Memcpy HtoD (Host -> Device)"} <= keys
    events = json.load(open(os.path.join(prof.directory, "trace.json")))["traceEvents"]
    names = {e["name"] for e in events if e.get("ph") == "X"}
    assert "aten::cumsum on host" in names and "copy exp to host" in names


def test_in_place_ops_run_on_the_device(tmp_path):
    x = torch.randn(16, 32)

    def f(x):
        y = x.clone()
        y.mul_(2.0).add_(1.0)
        return torch.relu_(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tt.HostFallbackWarning)
        with tt.profile(out_dir=str(tmp_path), report=False) as prof:
            y = f(x)
    torch.testing.assert_close(y, f(x))
    assert prof.stats["host"]["kernel_launches"] == 4  # clone, mul, add, relu


def test_a_block_with_nothing_for_the_device_is_an_error():
    idx = torch.arange(8)
    with pytest.raises(tt.CaptureError, match="nothing in the block runs on the device"):
        with tt.profile():
            (idx + 1) * 2


def test_fx_fuse_compiles_a_module_into_one_region(small, tmp_path):
    m, x = small
    fused = tt.fx_fuse(m)
    assert fused.tracer == "torch.fx.symbolic_trace"
    with tt.profile(out_dir=str(tmp_path), report=False) as prof:
        y = fused(x)
    with torch.no_grad():
        torch.testing.assert_close(y, m(x), atol=1e-5, rtol=1e-4)
    doc = json.load(open(prof.workload_path))
    assert doc["mode"] == "compile"
    keys = [e.key for e in prof.key_averages()]
    assert "CompiledFunction" in keys
    assert prof.stats["host"]["kernel_launches"] < 9


def test_fx_fuse_falls_back_to_make_fx_for_shape_arithmetic(tmp_path):
    def scaled(x):
        rows, cols = x.shape
        return torch.exp(x) * (1.0 / cols)
    fused = tt.fx_fuse(scaled)
    assert fused.tracer is None and fused.trace_error is not None
    x = torch.randn(32, 64)
    with tt.profile(out_dir=str(tmp_path), report=False) as prof:
        y = fused(x)
    assert fused.tracer == "make_fx"
    torch.testing.assert_close(y, scaled(x))
    assert json.load(open(prof.workload_path))["mode"] == "compile"


def test_meta_tensors_give_a_timing_only_profile(tmp_path):
    lin = torch.nn.Linear(256, 512, device="meta")
    with tt.profile(out_dir=str(tmp_path), report=False) as prof:
        lin(torch.empty(128, 256, device="meta"))
    assert prof.stats["host"]["kernel_launches"] >= 1
    assert not prof.host_ops
    assert not os.path.exists(os.path.join(str(tmp_path), "data"))


def test_a_block_that_runs_no_op_is_an_error():
    with pytest.raises(tt.CaptureError, match="ran no PyTorch op"):
        with tt.profile():
            pass


def test_an_unknown_arch_is_an_error_that_lists_the_presets():
    x = torch.ones(4, 4)
    with pytest.raises(Exception, match="trn9: unknown preset"):
        with tt.profile(arch="trn9"):
            torch.exp(x)


def test_tensors_made_inside_the_block_reach_the_device_as_inputs(tmp_path):
    x = torch.randn(16, 32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tt.HostFallbackWarning)
        with tt.profile(out_dir=str(tmp_path), report=False) as prof:
            y = x * torch.full((16, 32), 3.0) + torch.arange(32, dtype=torch.float32)
    torch.testing.assert_close(y, x * 3.0 + torch.arange(32, dtype=torch.float32))
    assert not prof.host_ops


def test_profiles_do_not_nest():
    with pytest.raises(RuntimeError, match="nested"):
        with tt.profile():
            with tt.profile():
                pass


def test_results_before_the_block_ends_are_an_error():
    prof = tt.profile()
    with pytest.raises(RuntimeError, match="after its with block"):
        prof.key_averages()
