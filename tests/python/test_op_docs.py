"""docs/frontends.md's supported-operator tables are the ones scripts/gen_op_docs.py writes from the op registry
and the importers' tables now: an op added without rerunning the script fails here."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("gen_op_docs", ROOT / "scripts" / "gen_op_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_supported_op_tables_are_up_to_date():
    gen = _script()
    text = gen.DOC.read_text()
    assert gen.render(text) == text, "docs/frontends.md is out of date: run python3 scripts/gen_op_docs.py"


def test_the_tables_name_every_graph_op_and_the_new_imports():
    section = _script().tables()
    from autosched.graph import registry
    assert all(f"| `{name}` |" in section for name in registry.OPS)
    for name in ("`Pad`", "`Resize`", "`Einsum`", "`ConvTranspose`", "`upsample_bilinear2d`", "`type_as`", "`Sin`"):
        assert name in section, name
