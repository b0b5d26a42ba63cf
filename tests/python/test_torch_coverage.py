"""docs/pytorch.md's op coverage table is the lowering table's own (trnsim.torch.coverage,
generated from trnsim/torch/_graph.py without torch), so the docs cannot drift from the code."""
import os

from trnsim.torch.coverage import coverage_markdown

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_docs_hold_the_generated_coverage_table():
    with open(os.path.join(ROOT, "docs", "pytorch.md")) as f:
        docs = f.read()
    table = coverage_markdown()
    assert table in docs, ("docs/pytorch.md's op coverage table is out of date: regenerate it "
                           "with PYTHONPATH=build/python:python /usr/bin/python3 -m "
                           "trnsim.torch.coverage")


def test_the_table_lists_the_ops_of_the_rmsnorm_story():
    table = coverage_markdown()
    for op in ("aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul",
               "trnsim::rms_norm", "aten::mm", "aten::_softmax"):
        assert f"`{op}`" in table
    assert table.splitlines()[-1].startswith("| any other op | host |")
