"""Makes the measured record logs that the cost model's tests read (tests/python/test_cost_model.py and
test_cost_model_transfer.py), with the tasks and seeds of tests/python/cost_model_data.py:

    PYTHONPATH=python:tests/python python3 tests/records/make_cost_model_records.py

The logs are made once and kept: the tests' accuracy bars hold for these timings, whatever CPU runs the
tests. Making them again (on another CPU, or under load) changes the data the bars were set on; say in
README.md which CPU made them. Prints the CPU and the files' sizes.
"""
import gzip
import os
import pathlib
import sys
import tempfile
import time

import autosched as ans

import cost_model_data as data

HERE = pathlib.Path(__file__).resolve().parent


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "?"


def keep(log, name):
    """Gzips `log` as HERE/name (no time stamp inside, so the same log gives the same bytes)."""
    with open(log, "rb") as src, open(HERE / name, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0, filename="") as dst:
            dst.write(src.read())


def main():
    start = time.perf_counter()
    tmp = pathlib.Path(tempfile.mkdtemp())
    ranking = str(tmp / "ranking.json")
    for task in data.ranking_tasks():
        inputs, results = data.measure(task, data.random_states(task, data.RANKING_STATES, seed=0))
        failed = [r.error for r in results if r.error_no]
        if failed:
            sys.exit(f"{task.desc}: {len(failed)} schedules failed, e.g. {failed[0]}")
        ans.records.save_records(ranking, [ans.MeasureInput(task, i.state) for i in inputs],
                                 [ans.MeasureResult(costs=r.costs) for r in results])
    keep(ranking, data.RANKING_LOG)
    for (desc, name), task, trials, seed in zip(data.TRANSFER_LOGS.items(), data.transfer_tasks(), (64, 48),
                                                (1, 11)):
        assert task.desc == desc
        log = str(tmp / f"transfer_{desc}.json")
        data.tune_random(task, log, trials, seed=seed)
        keep(log, name)
    print(f"made in {time.perf_counter() - start:.0f} s on {cpu_name()}, {os.cpu_count()} hardware threads; "
          f"{ans.Target('llvm')}")
    for name in [data.RANKING_LOG, *data.TRANSFER_LOGS.values()]:
        inputs, _ = data.recorded(name)
        print(f"  {name}: {len(inputs)} records, {(HERE / name).stat().st_size} bytes")


if __name__ == "__main__":
    main()
