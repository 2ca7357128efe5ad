"""The named-Cypher catalogue: malformed files fail loudly, every statement parses on Neo4j."""

from __future__ import annotations

import pytest

from graphmem.errors import QueryCatalogError
from graphmem.queries import QUERIES, compact, parse, resolve


def test_duplicate_name_is_refused():
    text = "// name: a.one\nRETURN 1\n// name: a.one\nRETURN 2\n"
    with pytest.raises(QueryCatalogError, match="duplicate statement name 'a.one'"):
        parse(text, "x.cypher")


def test_empty_statement_is_refused():
    with pytest.raises(QueryCatalogError, match="'a.empty' is empty"):
        parse("// name: a.empty\n// only a comment\n// name: a.two\nRETURN 2\n", "x.cypher")


def test_cypher_before_first_header_is_refused():
    with pytest.raises(QueryCatalogError, match="before the first"):
        parse("RETURN 0\n// name: a.one\nRETURN 1\n", "x.cypher")


def test_an_include_pastes_its_fragment_and_a_fragment_is_no_statement():
    parsed = parse("// fragment: a.sum\n1 + 2\n// name: a.one\nRETURN\n  // include: a.sum\nAS x\n",
                   "x.cypher")
    assert list(parsed.statements) == ["a.one"] and list(parsed.fragments) == ["a.sum"]
    assert resolve(parsed.statements, parsed.fragments) == {"a.one": "RETURN\n1 + 2\nAS x"}


def test_an_include_of_no_fragment_is_refused():
    parsed = parse("// name: a.one\nRETURN\n// include: a.nothing\n", "x.cypher")
    with pytest.raises(QueryCatalogError, match="'a.one' includes 'a.nothing', which is not a fragment"):
        resolve(parsed.statements, parsed.fragments)


def test_fragments_that_include_each_other_are_refused():
    parsed = parse("// fragment: a.x\n1 +\n// include: a.y\n// fragment: a.y\n2 +\n// include: a.x\n"
                   "// name: a.one\nRETURN\n// include: a.x\n", "x.cypher")
    with pytest.raises(QueryCatalogError, match="include each other"):
        resolve(parsed.statements, parsed.fragments)


def test_a_statement_included_in_another_has_its_parameters_bound():
    parsed = parse("// name: a.rule\nUNWIND $rows AS r\nRETURN r + $step AS x, $rowsize AS y\n"
                   "// name: a.user\nWITH [1] AS mine\nCALL (mine) {\n  // include: a.rule $rows=mine\n}\n"
                   "RETURN x\n", "x.cypher")
    assert resolve(parsed.statements, parsed.fragments)["a.user"] == (
        "WITH [1] AS mine\nCALL (mine) {\nUNWIND mine AS r\nRETURN r + $step AS x, $rowsize AS y\n}\n"
        "RETURN x")


def test_a_binding_of_a_parameter_the_included_text_does_not_use_is_refused():
    parsed = parse("// name: a.rule\nRETURN $x\n// name: a.user\nCALL () {\n// include: a.rule $y=v\n}\n", "x.cypher")
    with pytest.raises(QueryCatalogError, match="'a.user' binds \\$y, which 'a.rule' does not use"):
        resolve(parsed.statements, parsed.fragments)


def test_a_binding_may_name_a_property_of_a_variable():
    parsed = parse("// fragment: a.kept\n$version.id IN $listed\n"
                   "// name: a.user\nMATCH (k), (f)\nWHERE\n  // include: a.kept $version=f $listed=k.flagged\n"
                   "RETURN f\n", "x.cypher")
    assert resolve(parsed.statements, parsed.fragments)["a.user"] == (
        "MATCH (k), (f)\nWHERE\nf.id IN k.flagged\nRETURN f")


@pytest.mark.parametrize("line", ["// include: a.kept $version=f $listed=k.flags[0]",
                                  "// include: a.kept $version=f listed",
                                  "// include: a.kept $version=f.x.y"])
def test_an_include_line_that_does_not_parse_is_refused_not_left_as_a_comment(line):
    parsed = parse(f"// fragment: a.kept\n$version IN $listed\n// name: a.user\nMATCH (f)\nWHERE\n{line}\n"
                   "RETURN f\n", "x.cypher")
    with pytest.raises(QueryCatalogError, match="an include line must read"):
        resolve(parsed.statements, parsed.fragments)


def test_search_runs_the_read_rule_itself_not_a_copy():
    read_rule = QUERIES["fact.read"].replace("$reads", "reads").replace("$times", "times")
    assert read_rule.replace("$brief", "false") in QUERIES["search.hits"]
    assert "// include" not in QUERIES["search.hits"]


def test_the_server_gets_statements_without_comments_but_strings_intact():
    text = ("MATCH (n) // a comment\n    // a comment line\n\n  WHERE n.uri = 'https://x//y'"
            " AND n.note = \"say \\\"//\\\" \"\n  RETURN n.`odd//name`, 'two\n  lines' // end")
    assert compact(text) == ("MATCH (n)\nWHERE n.uri = 'https://x//y' AND n.note = \"say \\\"//\\\" \"\n"
                             "RETURN n.`odd//name`, 'two\n  lines'")
    assert not [name for name, body in QUERIES.items()
                if any(line.startswith("//") for line in body.splitlines())]


def test_unknown_name_suggests_close_ones():
    with pytest.raises(QueryCatalogError, match="did you mean fact.read"):
        QUERIES["fact.reed"]


def test_every_statement_has_a_dotted_name_and_text():
    assert len(QUERIES) > 20
    for name in QUERIES:
        assert "." in name and QUERIES[name].strip()


# DDL cannot be EXPLAINed; the schema statements run for real in the `migrated` fixture.
PLANNABLE = [name for name in QUERIES if not name.startswith("schema.")]


@pytest.mark.parametrize("name", PLANNABLE)
def test_statement_parses_and_plans_on_neo4j(migrated, name):
    with migrated.connect() as mem, mem.db.driver.session(database=mem.db.database) as session:
        session.run("EXPLAIN " + QUERIES[name]).consume()
