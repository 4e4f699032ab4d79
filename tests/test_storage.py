"""KIP-631 storage: meta.properties parsing (real corpus files and malformed samples), format and info."""

from __future__ import annotations

from pathlib import Path
import os

import pytest

import kraftspec.reference.storage as st
import kraftspec.reference.storage_rules as sr
from kraftspec.traces.metalog.corpus import CORPUS_DIR, public_dirs

CORPUS = sorted(str(d / "meta.properties") for d in public_dirs() if (d / "meta.properties").is_file())
"""The real meta.properties files of the bundled corpus that public repositories hold (``traces/corpus``, copied with
its license; the project's own cluster runs, with node ids 1–6, are audited by test_metalog_corpus.py)."""
CID = "QtNwvtfVQ3GEFpzOmDEE-w"
DIR_A = "vuFdPhP_V3HjMM-sCpnodw"
DIR_B = "hSCzevIQRUa-ojqTd_8C5w"
GOOD_V1 = f"#\n#Wed Feb 26 20:30:13 WIB 2025\ncluster.id={CID}\ndirectory.id={DIR_A}\nnode.id=1\nversion=1\n"


def test_corpus_present() -> None:
    assert len(CORPUS) >= 5


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: Path(p).relative_to(CORPUS_DIR).parts[0])
def test_every_real_meta_properties_parses(path: str) -> None:
    with open(path, encoding="utf-8") as handle:
        meta = st.parse_meta_properties(handle.read(), path)
    assert meta.version == 1 and meta.node_id == 1
    assert meta.cluster_id is not None and len(meta.cluster_id) == 22


def test_good_v1_and_v0() -> None:
    assert st.parse_meta_properties(GOOD_V1, "m") == st.MetaProperties(version=1, cluster_id=CID, node_id=1, directory_id=DIR_A)
    assert st.parse_meta_properties("broker.id=5\ncluster.id=" + CID + "\n", "m") == st.MetaProperties(version=0, cluster_id=CID, node_id=5, directory_id=None)
    assert st.parse_meta_properties("# legacy, nothing guaranteed\n", "m") == st.MetaProperties(version=0, cluster_id=None, node_id=None, directory_id=None)
    assert st.parse_meta_properties("version : 1\nnode.id 7\ncluster.id=" + CID + "\n", "m").node_id == 7
    assert st.parse_meta_properties("version=1\nnode.id=\\\n  42\ncluster.id=" + CID + "\n", "m").node_id == 42


# (name, text, key, line) — line None when the key is missing.
MALFORMED = [
    ("missing node.id", f"version=1\ncluster.id={CID}\n", "node.id", None),
    ("missing cluster.id", "version=1\nnode.id=1\n", "cluster.id", None),
    ("bad cluster.id length", "version=1\nnode.id=1\ncluster.id=abc\n", "cluster.id", 3),
    ("cluster.id too long", "version=1\nnode.id=1\ncluster.id=QtNwvtfVQ3GEFpzOmDEE-wXYZ\n", "cluster.id", 3),
    ("cluster.id bad chars", "version=1\nnode.id=1\ncluster.id=QtNwvtfVQ3GEFpzOmDEE+w\n", "cluster.id", 3),
    ("cluster.id empty", "version=1\nnode.id=1\ncluster.id=\n", "cluster.id", 3),
    ("wrong version", f"version=3\nnode.id=1\ncluster.id={CID}\n", "version", 1),
    ("version 2 (trunk only)", f"#\nversion=2\nnode.id=1\ncluster.id={CID}\n", "version", 2),
    ("non-integer version", f"version=one\nnode.id=1\ncluster.id={CID}\n", "version", 1),
    ("duplicate key", f"version=1\nnode.id=1\ncluster.id={CID}\nnode.id=2\n", "node.id", 4),
    ("duplicate version", f"version=1\nversion=1\nnode.id=1\ncluster.id={CID}\n", "version", 2),
    ("non-integer node.id", f"version=1\nnode.id=one\ncluster.id={CID}\n", "node.id", 2),
    ("node.id trailing space", f"version=1\nnode.id=1 \ncluster.id={CID}\n", "node.id", 2),
    ("node.id overflow", f"version=1\nnode.id=2147483648\ncluster.id={CID}\n", "node.id", 2),
    ("node.id float", f"version=1\nnode.id=1.0\ncluster.id={CID}\n", "node.id", 2),
    ("node.id empty", f"version=1\nnode.id=\ncluster.id={CID}\n", "node.id", 2),
    ("v0 bad broker.id", f"broker.id=x\ncluster.id={CID}\n", "broker.id", 1),
    ("bad directory.id", f"version=1\nnode.id=1\ncluster.id={CID}\ndirectory.id=not-a-uuid\n", "directory.id", 4),
    ("short directory.id", f"version=1\nnode.id=1\ncluster.id={CID}\ndirectory.id=AAAA\n", "directory.id", 4),
    ("malformed unicode escape", f"version=1\nnode.id=\\u00zz\ncluster.id={CID}\n", "node.id", 2),
    ("comment lines counted", f"#\n#date\n\nversion=1\nnode.id=1\ncluster.id={CID}\nnode.id=1\n", "node.id", 7),
]


@pytest.mark.parametrize("name,text,key,line", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_names_file_line_and_key(name: str, text: str, key: str, line: int | None) -> None:
    path = "/var/kafka/data/meta.properties"
    with pytest.raises(st.StorageError) as info:
        st.parse_meta_properties(text, path)
    error = info.value
    assert error.file == path
    assert error.key == key
    assert error.line == line
    assert path in str(error)


def test_kafka_messages() -> None:
    def message(text: str) -> str:
        with pytest.raises(st.StorageError) as info:
            st.parse_meta_properties(text, "f")
        return info.value.message

    assert message(f"version=1\ncluster.id={CID}\n") == "Failed to find node.id"
    assert message("version=1\nnode.id=1\n") == "cluster.id was not found."
    assert message(f"version=1\nnode.id=x\ncluster.id={CID}\n") == "Unable to read node.id as a base-10 number."
    assert message("version=7\n") == "Unknown meta.properties version number 7"
    assert message("version=x\n") == "Invalid meta.properties version string 'x'"
    assert message(f"version=1\nnode.id=1\ncluster.id={CID}\ndirectory.id=AAAA\n") == (
        "Unable to read directory.id as a Uuid: Input string `AAAA` decoded as 3 bytes, which is not equal to "
        "the expected 16 bytes of a base64-encoded UUID")


def test_uuid_rules() -> None:
    assert sr.uuid_from_string("AAAAAAAAAAAAAAAAAAAAAQ") == (0, 1)
    assert sr.uuid_from_string("AAAAAAAAAAAAAAAAAAAAAQ==") == (0, 1)
    assert sr.is_reserved_directory_id(0, 99) and not sr.is_reserved_directory_id(0, 100)
    negative = sr.uuid_from_string("AAAAAAAAAAD__________w")  # low half -1 as a Java long: reserved
    assert negative == (0, 2**64 - 1) and sr.is_reserved_directory_id(*negative)
    with pytest.raises(ValueError, match="too long"):
        sr.uuid_from_string("A" * 25)
    assert sr.parse_java_int("+5") == 5 and sr.parse_java_int("-1") == -1


# ---------------------------------------------------------------- format

def test_format_fresh_directories() -> None:
    result = st.format_directories({"/data": {}, "/meta": None}, CID, 1, "/meta", release_version=30,
                                   directory_ids=(DIR_A, DIR_B), date_comment="Sun Nov 22 00:00:00 UTC 2026")
    written = dict(result.written)
    assert set(written) == {"/data", "/meta"}
    assert set(written["/data"]) == {"meta.properties"}
    assert written["/meta"]["__cluster_metadata-0"] == {
        "00000000000000000000-0000000000.checkpoint": st.BootstrapSnapshot(feature_levels=(("metadata.version", 30),))}
    text = written["/meta"]["meta.properties"]
    assert text == f"#\n#Sun Nov 22 00:00:00 UTC 2026\ncluster.id={CID}\ndirectory.id={DIR_B}\nnode.id=1\nversion=1\n"
    assert st.parse_meta_properties(text, "x") == st.MetaProperties(version=1, cluster_id=CID, node_id=1, directory_id=DIR_B)
    assert result.output == ("Formatting data directory /data with metadata.version 4.3-IV0.\n"
                             "Formatting metadata directory /meta with metadata.version 4.3-IV0.\n")


def test_format_refuses_formatted_unless_ignored() -> None:
    dirs = {"/a": {"meta.properties": GOOD_V1}, "/b": {}}
    with pytest.raises(st.FormatError) as info:
        st.format_directories(dirs, CID, 1, "/a", directory_ids=(DIR_B,))
    assert str(info.value) == ("Log directory /a is already formatted. "
                               "Use --ignore-formatted to ignore this directory and format the others.")
    result = st.format_directories(dirs, CID, 1, "/a", ignore_formatted=True, directory_ids=(DIR_B,))
    assert [path for path, _ in result.written] == ["/b"]
    only_formatted = st.format_directories({"/a": {"meta.properties": GOOD_V1}}, CID, 1, "/a", ignore_formatted=True)
    assert only_formatted.written == () and only_formatted.output == "All of the log directories are already formatted.\n"


@pytest.mark.parametrize("kwargs,message", [
    (dict(node_id=-1), "You must specify a valid non-negative node ID."),
    (dict(cluster_id=None), "You must specify the cluster id."),
    (dict(cluster_id="my-cluster"), "Cluster ID string my-cluster does not appear to be a valid UUID: Input string "
                                    "`my-cluster` decoded as 7 bytes, which is not equal to the expected 16 bytes of a base64-encoded UUID"),
    (dict(log_dirs={}), "You must specify at least one directory to format"),
    (dict(metadata_log_dir="/elsewhere"), "The specified metadata log directory, /elsewhere was not one of the given directories: [/a]"),
    (dict(release_version=31), "metadata.version 4.4-IV0 is not yet stable."),
    (dict(log_dirs={"/a": {"meta.properties": GOOD_V1.replace("node.id=1", "node.id=2")}}, ignore_formatted=True),
     "Stored node id 2 doesn't match previous node id 1 in /a/meta.properties. If you moved your data, make sure your "
     "configured node id matches. If you intend to create a new node, you should remove all data in your data directories."),
    (dict(log_dirs={"/a": {"meta.properties": GOOD_V1.replace(CID, DIR_B)}}, ignore_formatted=True),
     f"Invalid cluster.id in: /a/meta.properties. Expected {CID}, but read {DIR_B}"),
    (dict(log_dirs={"/a": {"meta.properties": "x=\\u12"}}, ), "No available log directories to format."),
])
def test_format_errors(kwargs: dict, message: str) -> None:
    args = dict(log_dirs={"/a": {}}, cluster_id=CID, node_id=1, metadata_log_dir="/a", directory_ids=(DIR_A,))
    args.update(kwargs)
    with pytest.raises(st.FormatError) as info:
        st.format_directories(**args)
    assert str(info.value) == message


def test_format_rejects_shared_and_reserved_directory_ids() -> None:
    formatted = {"meta.properties": GOOD_V1}
    with pytest.raises(st.FormatError, match="Duplicate directory ID"):
        st.format_directories({"/a": formatted, "/b": formatted}, CID, 1, "/a", ignore_formatted=True)
    reserved = {"meta.properties": GOOD_V1.replace(DIR_A, "AAAAAAAAAAAAAAAAAAAAAQ")}
    with pytest.raises(st.FormatError, match="Invalid resrved directory ID AAAAAAAAAAAAAAAAAAAAAQ found in /a"):
        st.format_directories({"/a": reserved}, CID, 1, "/a", ignore_formatted=True)


# ---------------------------------------------------------------- info

def test_info_formatted_and_problems() -> None:
    ok = st.info({"/a": {"meta.properties": GOOD_V1}}, self_managed=True)
    assert ok == st.InfoResult(exit_code=0, output="Found log directory:\n  /a\n\n"
                                  f"Found metadata: {{cluster.id={CID}, directory.id={DIR_A}, node.id=1, version=1}}\n\n")
    other = GOOD_V1.replace(CID, DIR_B)
    bad = st.info({"/a": {"meta.properties": GOOD_V1}, "/b": {"meta.properties": other}, "/c": {}, "/d": None, "/e": "file"}, True)
    assert bad.exit_code == 1
    assert bad.output.endswith("Found problems:\n  Mismatched cluster IDs between storage directories.\n"
                               "  /c is not formatted.\n  /d does not exist\n  /e is not a directory\n\n")
    assert bad.output.startswith("Found log directories:\n  /a\n  /b\n  /c\n\n")
    legacy = st.info({"/a": {"meta.properties": "broker.id=1\n"}}, self_managed=True)
    assert "formatted for legacy mode." in legacy.output and legacy.exit_code == 1
    broken = st.info({"/a": {"meta.properties": "version=1\n"}}, True)
    assert "  Error loading /a/meta.properties: Failed to find node.id\n" in broken.output
    assert st.info({}, True) == st.InfoResult(exit_code=0, output="No directories specified.\n")


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: Path(p).relative_to(CORPUS_DIR).parts[0])
def test_info_on_real_directories(path: str) -> None:
    directory = os.path.dirname(path)
    with open(path, encoding="utf-8") as handle:
        files = {name: "" for name in os.listdir(directory)} | {"meta.properties": handle.read()}
    result = st.info({directory: files}, self_managed=True)
    assert result.exit_code == 0 and "Found metadata: {cluster.id=" in result.output
