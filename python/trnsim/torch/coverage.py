"""The op coverage table: which aten ops lower to which graph ops and kernels, generated from
the lowering table itself (trnsim/torch/_graph.py, LOWERINGS) into docs/pytorch.md:

    PYTHONPATH=build/python:python /usr/bin/python3 -m trnsim.torch.coverage

prints the table; tests check that docs/pytorch.md holds it verbatim. Needs no torch.
"""

from ._graph import LOWERINGS


def coverage_markdown():
    lines = ["| aten op | graph op | kernel | notes |", "|---|---|---|---|"]
    for entry in LOWERINGS:
        names = ", ".join(f"`{n}`" for n in entry.names)
        lines.append(f"| {names} | {entry.graph_op} | {entry.kernel} | {entry.note} |")
    lines.append("| any other op | host | none: runs on the host (copies in and out) | "
                 "listed in the profile's warning and in `prof.host_ops` |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(coverage_markdown(), end="")
