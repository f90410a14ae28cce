"""The model cache is bounded: every entry's sidecar and lease (hardcse/cache.py), listing and pruning
(hardcse/cache_entries.py) and `hardcse cache` (docs/development.md "Caches")."""

import hashlib
import json
import os
import socket
import subprocess
import sys
import time

import pytest
import torch

from hardcse import cache, cache_entries
from hardcse.cache import EntryDescription, environment, leases_dir, publish_dir, sidecar_path
from hardcse.cache_entries import DAY, list_entries, parse_age, parse_size, prune
from hardcse.cli import main
from hardcse.machine import library_versions, machine_kind

CPU = torch.device("cpu")
HOST = socket.gethostname()
OTHER_CODE = "0" * 64


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("HARDCSE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def make_entry(root, where: str, size: int, days_ago: float, code: str | None = None, sidecar: bool = True):
    """A folder entry of ``size`` bytes published with publish_dir, last used ``days_ago``, its lease a dead
    process's (publish_dir leased it to this test's process, which a prune must not see as a job)."""
    target = root / where
    found = environment(CPU) if code is None else {**environment(CPU), "code": code}
    described = EntryDescription(where.split("/")[0], f"test entry {where}", found) if sidecar else None
    publish_dir(target, lambda tmp: (tmp / "weights").write_bytes(b"\0" * size), complete, described)
    os.replace(leases_dir(target) / f"{HOST}-{os.getpid()}", leases_dir(target) / f"{HOST}-{dead_pid()}")
    last_used(target, days_ago)
    return target


def make_file_entry(root, where: str, size: int, days_ago: float):
    path = root / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    cache.write_sidecar(path, EntryDescription(where.split("/")[0], "test file entry", environment(CPU, True)))
    last_used(path, days_ago)
    return path


def last_used(entry, days_ago: float) -> None:
    """Set every time an entry's last use is read from to ``days_ago``."""
    when = time.time() - days_ago * DAY
    leases = leases_dir(entry)
    for path in [entry, sidecar_path(entry), leases, *(leases.iterdir() if leases.is_dir() else [])]:
        if path.exists():
            os.utime(path, (when, when))


def complete(folder) -> bool:
    return (folder / "weights").is_file()


def sizes(paths) -> int:
    """What an entry weighs by hand: its weights and its sidecar."""
    return sum((p / "weights").stat().st_size + sidecar_path(p).stat().st_size for p in paths)


def test_environment_digest_feeds_the_bytes_every_existing_key_was_made_of():
    for shared in (False, True):
        by_hand = hashlib.sha256(b"a cache's own inputs\0")
        code = cache.code_digest(without=cache.UPPER_LAYERS if shared else ())
        by_hand.update(f"code {code}\0".encode())
        by_hand.update(json.dumps(library_versions(), sort_keys=True).encode())
        by_hand.update(f"\0{machine_kind(CPU)}\0".encode())
        now = hashlib.sha256(b"a cache's own inputs\0")
        found = cache.environment_digest(now, CPU, shared_code=shared)
        assert now.hexdigest() == by_hand.hexdigest()
        assert found == {
            "code": code,
            "scope": "shared" if shared else "all",
            "libraries": library_versions(),
            "machine": machine_kind(CPU),
            "device": "cpu",
        }


def test_the_converted_checkpoints_key_is_the_one_computed_before_sidecars(root, monkeypatch):
    from hardcse import resources

    monkeypatch.setattr(cache, "publish_dir", lambda target, *_: target)  # the key only: no conversion
    gguf = resources.bundled_generator_gguf()
    by_hand = hashlib.sha256(f"{gguf.name}\0".encode() + gguf.read_bytes())
    by_hand.update(f"code {cache.code_digest(without=cache.UPPER_LAYERS)}\0".encode())
    by_hand.update(json.dumps(library_versions(), sort_keys=True).encode())
    by_hand.update(f"\0{machine_kind(CPU)}\0".encode())
    assert resources.bundled_generator_dir() == root / f"smollm2-135m-instruct-{by_hand.hexdigest()[:16]}"


def test_publish_dir_writes_the_sidecar_beside_the_entry_and_leases_it_at_every_hit(root):
    target = root / "openvino" / "k1"
    described = EntryDescription("openvino", "a model, float weights", environment(CPU))
    publish_dir(target, lambda tmp: (tmp / "weights").write_text("w"), complete, described)
    assert sorted(p.name for p in target.iterdir()) == ["weights"]  # the entry itself as built, byte for byte
    sidecar = json.loads(sidecar_path(target).read_text())
    assert {k: sidecar[k] for k in ("kind", "description", "environment")} == {
        "kind": "openvino",
        "description": "a model, float weights",
        "environment": environment(CPU),
    }
    assert abs(time.time() - __import__("datetime").datetime.fromisoformat(sidecar["created"]).timestamp()) < 60
    lease = leases_dir(target) / f"{HOST}-{os.getpid()}"
    assert lease.is_file()
    os.utime(lease, (1e9, 1e9))
    publish_dir(target, lambda tmp: pytest.fail("built again"), complete, described)
    assert time.time() - lease.stat().st_mtime < 60  # a hit is a use
    sidecar_path(target).unlink()  # published by a process killed after its rename: the next hit describes it
    publish_dir(target, lambda tmp: pytest.fail("built again"), complete, described)
    assert json.loads(sidecar_path(target).read_text())["kind"] == "openvino"


def test_the_listing_gives_sizes_currency_and_last_use_least_recently_used_first(root, capsys):
    old = make_entry(root, "openvino/old", 2_000_000, days_ago=10, code=OTHER_CODE)
    unknown = make_entry(root, "discriminator/unknown", 1_000_000, days_ago=5, sidecar=False)
    current = make_entry(root, "tuned/family/steps-2-ab", 500_000, days_ago=1)
    scores = make_file_entry(root, "eval/scores.json", 1_500_000, days_ago=3)
    (root / "openvino" / "old.partial-killed").mkdir()  # a leftover, not an entry
    entries = list_entries()
    assert [e.path for e in entries] == [old, unknown, scores, current]
    assert [e.kind for e in entries] == ["openvino", "discriminator", "eval", "tuned"]
    assert [e.current for e in entries] == [False, None, True, True]
    assert entries[0].size == 2_000_000 + sidecar_path(old).stat().st_size
    assert entries[1].size == 1_000_000  # no sidecar
    assert entries[2].size == 1_500_000 + sidecar_path(scores).stat().st_size
    assert [round((time.time() - e.last_used) / DAY, 3) for e in entries] == [10, 5, 3, 1]
    assert entries[0].code == OTHER_CODE[:12] and entries[3].code == environment(CPU)["code"][:12]

    assert main(["cache", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"cache: {root}"
    assert out[3].startswith(f"| openvino | 2.0 | no | {OTHER_CODE[:12]} | test entry openvino/old | ")
    assert out[3].endswith(" | openvino/old |")
    assert out[4].startswith("| discriminator | 1.0 | unknown | - | unknown | ")
    assert out[5].startswith("| eval | 1.5 | yes | ")
    assert out[7] == "total: 5.0 MB in 4 entries"  # 5,000,000 bytes and four small sidecars
    assert out[8] == "leftovers of killed processes: 1 (any `hardcse cache prune` removes them)"
    assert main(["cache", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["total_bytes"] == sum(e.size for e in entries)
    assert [(e["kind"], e["current"]) for e in listed["entries"]] == [
        ("openvino", False),
        ("discriminator", None),
        ("eval", True),
        ("tuned", True),
    ]


def test_sizes_and_ages_are_read_as_written():
    assert parse_size("5G") == 5_000_000_000 and parse_size("500M") == 500_000_000
    assert parse_size("1.5GB") == 1_500_000_000 and parse_size("2k") == 2000 and parse_size("123") == 123
    assert parse_age("30") == parse_age("30d") == 30 * 86400 and parse_age("12h") == 43200


def test_prune_by_age_removes_what_was_not_used_for_that_long(root, capsys):
    stale = make_entry(root, "openvino/stale", 1_200_000, days_ago=40)
    recent = make_entry(root, "openvino/recent", 1000, days_ago=20)
    scores = make_file_entry(root, "eval/scores.json", 300_000, days_ago=31)
    freed = sizes([stale]) + 300_000 + sidecar_path(scores).stat().st_size  # 1,500,000 and two sidecars
    assert main(["cache", "prune", "--older-than", "30d"]) == 0
    out = capsys.readouterr().out
    assert "removed openvino/stale (openvino, 1.2 MB, last used " in out and "removed eval/scores.json" in out
    assert f"freed {freed / 1e6:.1f} MB" in out and "freed 1.5 MB" in out
    assert not stale.exists() and not scores.exists() and not sidecar_path(scores).exists()
    assert not leases_dir(stale).exists() and not sidecar_path(stale).exists()
    assert recent.is_dir() and not list((root / "openvino").glob("*deleting*"))
    assert [e.path for e in prune(older_than=parse_age("480h"), dry_run=True).removed] == [recent]  # 20 days


def test_prune_by_size_removes_the_least_recently_used_first(root):
    third = make_entry(root, "openvino/third", 1_000_000, days_ago=1)
    first = make_entry(root, "openvino/first", 1_000_000, days_ago=3)
    second = make_entry(root, "discriminator/second", 1_000_000, days_ago=2)
    total, oldest = sizes([first, second, third]), sizes([first])  # 3,000,000 bytes and three sidecars
    done = prune(max_size=total - 1)  # one byte over: the oldest goes, and only it
    assert [e.path for e in done.removed] == [first] and done.freed == oldest
    assert [e.path for e in prune(max_size=1_500_000).removed] == [second]  # 2,000,000+ -> 1,000,000+
    assert [e.path for e in list_entries()] == [third]
    assert prune(max_size=parse_size("5M")).removed == []  # under the bound already


def test_keep_current_never_prunes_what_todays_code_would_key_the_same(root):
    current = make_entry(root, "openvino/current", 100, days_ago=50)
    other = make_entry(root, "openvino/other", 100, days_ago=50, code=OTHER_CODE)
    unknown = make_entry(root, "openvino/unknown", 100, days_ago=50, sidecar=False)
    with pytest.MonkeyPatch.context() as m:  # today's machine is another CPU: nothing is current any more
        m.setattr(cache, "machine_kind", lambda device: "cpu another")
        assert sum(e.current is True for e in list_entries()) == 0
    done = prune(older_than=0, keep_current=True)
    assert sorted(e.path for e in done.removed) == sorted([other, unknown])
    assert current.is_dir() and not other.exists() and not unknown.exists()


def test_a_dry_run_deletes_nothing(root, capsys):
    entry = make_entry(root, "openvino/k", 1000, days_ago=40)
    dead = next(leases_dir(entry).iterdir())
    (root / "openvino" / "k.partial-killed").mkdir()
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    assert main(["cache", "prune", "--older-than", "1", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would remove openvino/k (openvino" in out and "would remove openvino/k.partial-killed" in out
    assert f"would free {(sizes([entry])) / 1e6:.1f} MB" in out
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before and dead.is_file()


def test_an_entry_leased_by_a_live_process_is_skipped_and_a_dead_processs_lease_is_cleared(root):
    entry = make_entry(root, "openvino/leased", 1000, days_ago=40)
    dead = next(leases_dir(entry).iterdir())
    used = max(p.stat().st_mtime for p in [leases_dir(entry), dead])
    job = subprocess.Popen(["sleep", "60"])
    try:
        (leases_dir(entry) / f"{HOST}-{job.pid}").touch()
        os.utime(leases_dir(entry) / f"{HOST}-{job.pid}", (used - DAY, used - DAY))
        os.utime(leases_dir(entry), (used, used))  # the job took its lease 40 days ago too
        done = prune(older_than=DAY)
        assert done.removed == [] and done.in_use[0][1] == f"leased by {HOST}-{job.pid}"
        assert entry.is_dir() and not dead.exists()  # the dead process's lease went, the live one stays
        assert list_entries()[0].last_used == pytest.approx(used)  # and the last use is what the leases said
    finally:
        job.kill()
        job.wait()
    (leases_dir(entry) / "another-host-12").touch()  # a lease from another host: its process cannot be checked
    last_used(entry, 40)
    assert prune(older_than=DAY).in_use[0][1] == "leased by another-host-12"
    (leases_dir(entry) / "another-host-12").unlink()  # (which makes the lease folder's time now: set it back)
    last_used(entry, 40)
    assert [e.path for e in prune(older_than=DAY).removed] == [entry] and not entry.exists()


def test_an_entry_whose_lock_another_process_holds_is_skipped_and_leftovers_go_when_free(root):
    busy = make_entry(root, "openvino/busy", 1000, days_ago=40)
    (root / "openvino" / "busy.partial-building").mkdir()  # the build that holds the lock
    (root / "openvino" / "gone.deleting-killed").mkdir()  # a prune killed before its rmtree
    (root / "openvino" / "gone.deleting-killed" / "gone").mkdir()
    script = f"""
        import sys, time
        from filelock import FileLock
        with FileLock({str(root / "openvino" / "busy.lock")!r}):
            print("locked", flush=True)
            time.sleep(60)
    """
    holder = subprocess.Popen([sys.executable, "-c", __import__("textwrap").dedent(script)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"locked"
        done = prune(older_than=DAY)
        assert done.removed == [] and done.in_use[0][1] == "a process holds its lock (building or leasing it)"
        assert done.leftovers == [root / "openvino" / "gone.deleting-killed"]
        assert busy.is_dir() and (root / "openvino" / "busy.partial-building").is_dir()
    finally:
        holder.kill()
        holder.wait()
    done = prune(older_than=DAY)
    assert done.leftovers == [root / "openvino" / "busy.partial-building"] and [e.path for e in done.removed] == [busy]
    assert sorted(p.name for p in (root / "openvino").iterdir()) == ["busy.lock", "gone.lock"]  # locks stay


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "error: say what to prune: give --older-than DAYS or --max-size SIZE"),
        (["--keep-current"], "error: say what to prune: give --older-than DAYS or --max-size SIZE"),
        (["--max-size", "5Q"], "error: --max-size 5Q: not a size; give a number with K, M, G or T"),
        (["--older-than", "-1"], "error: --older-than -1: not an age; give days (30 or 30d) or hours (12h)"),
        (["--older-than", "a week"], "error: --older-than a week: not an age"),
    ],
)
def test_a_prune_asked_wrongly_says_which_flag_in_one_line_with_status_2(root, capsys, args, message):
    make_entry(root, "openvino/k", 10, days_ago=40)
    assert main(["cache", "prune", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and len(err.splitlines()) == 1
    assert (root / "openvino" / "k").is_dir()


def test_a_cached_evaluation_read_back_is_a_use_and_is_described(root, tiny_encoder_dir, monkeypatch):
    from hardcse.atomic import write_json_atomic
    from hardcse.evaluation import results, sts

    def evaluated(path, source, *args, **kwargs) -> dict:  # no encoding: the cache's handling is what is tested
        record = {"model": source, "avg7": 70.0, "seconds": 1.0}
        write_json_atomic(path, record)
        return record

    monkeypatch.setattr(sts, "write_sts_eval", evaluated)
    results.cached_eval(str(tiny_encoder_dir), tasks=["STS-B"])
    (path,) = (root / "eval").glob("*[0-9a-f].json")
    sidecar = json.loads(sidecar_path(path).read_text())
    assert sidecar["kind"] == "eval" and sidecar["environment"]["scope"] == "shared"
    assert sidecar["description"].startswith(f"{tiny_encoder_dir} on STS-B, pooling default, torch")
    os.utime(path, (1e9, 1e9))
    assert "read_from" in results.cached_eval(str(tiny_encoder_dir), tasks=["STS-B"])
    assert time.time() - path.stat().st_mtime < 60


def test_cached_generations_read_back_are_a_use_and_are_described(root, tiny_lm_dir):
    from hardcse.art.config import GeneratorConfig
    from hardcse.art.generator.texts import TextGenerator
    from hardcse.engines import Engine

    config = GeneratorConfig(dtype="float32", top_k=1, max_new_tokens=3, device="cpu")
    generator = TextGenerator(str(tiny_lm_dir), config, Engine("torch"), cache=True)
    generator.generate(["the cat", "a dog"], row_seeds=[1, 2])
    (path,) = (root / "generations").glob("*[0-9a-f].json")
    sidecar = json.loads(sidecar_path(path).read_text())
    assert sidecar["kind"] == "generations" and sidecar["description"] == f"{tiny_lm_dir} in torch: 2 texts"
    assert sidecar["environment"] == environment(CPU)
    os.utime(path, (1e9, 1e9))
    assert generator.generate(["the cat", "a dog"], row_seeds=[1, 2]).from_cache
    assert time.time() - path.stat().st_mtime < 60
    assert [e.kind for e in cache_entries.list_entries()] == ["generations"]
