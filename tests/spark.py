"""A small local Spark for tests: one JVM, ``local[1]``, 512 MB of heap, no UI, every call bounded in time.

Spark needs a Java runtime (pyspark 4 runs on Java 17 or 21; .ci/run installs Debian's openjdk-17-jre-headless).
Without one, :func:`local_spark` fails at once with a message saying so, instead of pyspark's "Java gateway
process exited". pyspark waits for the JVM without a time limit, so every call goes through :func:`bounded`: past
its limit the JVMs this process started are killed (by id) and the test fails naming the call.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as CallTimeout
from contextlib import contextmanager
from typing import Any

import psutil
import pytest

START_SECONDS = 300  # starting a JVM on a loaded 2-core machine took up to ~60 s
CALL_SECONDS = 300
SETTINGS = {
    "spark.master": "local[1]",
    "spark.driver.memory": "512m",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    # short jobs on small data: the quick compiler only and one GC thread start and finish sooner
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    # partition folders such as sample_id=001 read as text, not as the integer 1 (docs/cohorts.md)
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    # feature ids that differ only in case (cell:CD3e:mean, cell:CD3E:mean) are two columns
    "spark.sql.caseSensitive": "true",
}


def java_major() -> int:
    """The major version of the Java runtime pyspark will start (JAVA_HOME's, else ``java`` on PATH); a test
    failure saying what to install when there is none."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        where = f"JAVA_HOME={home} has no bin/java" if home else "no java on PATH and no JAVA_HOME"
        pytest.fail(f"Spark needs a Java runtime (17 or 21) and found none ({where}): "
                    "apt-get install openjdk-17-jre-headless (.ci/run installs it)")
    shown = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
    found = re.search(r'version "(\d+)(?:\.(\d+))?', shown)
    if not found:
        pytest.fail(f"cannot tell the version of {java}: {shown[:200]!r}")
    major = int(found[1])
    return int(found[2]) if major == 1 else major  # "1.8.0" is Java 8


def _stop_our_jvms() -> list[int]:
    """Kill the Java processes this process started (its children); returns their ids."""
    killed = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.name() == "java":
                child.kill()
                killed.append(child.pid)
        except psutil.NoSuchProcess:
            pass
    return killed


def bounded[T](call: Callable[[], T], what: str, seconds: float = CALL_SECONDS) -> T:
    """``call()``, or a test failure naming ``what`` when it takes more than ``seconds`` (the JVM is killed)."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="spark-call")
    try:
        return pool.submit(call).result(timeout=seconds)
    except CallTimeout:
        killed = _stop_our_jvms()
        pytest.fail(f"Spark: {what} took more than {seconds:.0f} s; stopped the JVM (pids {killed})")
    finally:
        pool.shutdown(wait=False)


def _forget_the_jvm() -> None:
    """Shut down the JVM an earlier session of this process started (pyspark keeps one per process and reuses it,
    with the class path it was started with), so that the next session starts its own."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        bounded(SparkContext._active_spark_context.stop, "stopping the earlier session")
    if SparkContext._gateway is not None:
        bounded(SparkContext._gateway.shutdown, "shutting down the earlier JVM")
        SparkContext._gateway = None
        SparkContext._jvm = None


@contextmanager
def local_spark(name: str, *, own_jvm: bool = False, **settings: Any) -> Iterator[Any]:
    """A SparkSession with :data:`SETTINGS` (plus ``settings``), stopped on exit. ``own_jvm``: in a JVM started
    for it, as settings read only at start (``spark.driver.extraClassPath``) need."""
    major = java_major()
    if major < 17:
        pytest.fail(f"pyspark 4 needs Java 17 or 21, found Java {major}: apt-get install openjdk-17-jre-headless")
    from pyspark.sql import SparkSession

    if own_jvm:
        _forget_the_jvm()

    builder = SparkSession.builder.appName(name)
    for key, value in {**SETTINGS, **settings}.items():
        builder = builder.config(key, value)
    spark = bounded(builder.getOrCreate, "starting the session", START_SECONDS)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        bounded(spark.stop, "stopping the session")
