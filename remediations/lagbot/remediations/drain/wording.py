"""The wording of the emergency drain: its plan, progress, refusals, outcome and verification.

Tiny functions, one per message (see lagbot.core.messages for the shared ones and the number formats).
"""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.core.messages import count, duration, rate


def drain_unreadable(group: str, why: str) -> str:
    return f"cannot plan a drain of {group!r}: its offsets could not be read ({why})"


def drain_unknown_topics(group: str, topics: Sequence[str]) -> str:
    return f"group {group!r} does not consume {', '.join(topics)}"


def drain_summary(group: str, offsets: int, tasks: int, eta: float) -> str:
    """One line for the button (<= 75 characters): the group name is shortened to fit."""
    if not tasks:
        return f"Drain {group[:50]}: nothing to drain"
    tail = f": {count(offsets)} msgs, {tasks} tasks, ~{duration(eta)}"
    room = 75 - len("Drain ") - len(tail)
    name = group if len(group) <= room else group[: max(1, room - 1)] + "…"
    return f"Drain {name}{tail}"


def drain_preflight(pause: bool) -> list[str]:
    checks = ["the group's committed offsets have not moved back since this plan"]
    if pause:
        checks.append("the group is Empty once its consumers are scaled to 0")
    else:
        checks.append("the group is Empty (no consumers running)")
    checks.append("every range is written and the manifest is durable before any offset moves")
    return checks


def drain_step_pause(workload: str | None) -> str:
    target = f"`{workload}`" if workload else "the group's workload (from the policy)"
    return f"Pause consumers: scale {target} to 0 through the executor, wait until the group is Empty"


def drain_step_read(offsets: int, ranges: int, chunk: int, slots: int, master: str) -> str:
    return (
        f"Read {count(offsets)} offsets in {ranges} ranges of at most {count(chunk)} "
        f"({slots} Spark tasks at a time, master {master}), each by offset with assign + seek"
    )


def drain_step_write(kind: str, sink: str, manifest: str) -> str:
    if kind == "replay":
        where = f"Replay into topic `{sink.removeprefix('kafka:')}` (idempotent producer)"
    else:
        where = f"Write Parquet to `{sink}` (one directory per range, replaced on a rerun)"
    return f"{where}; then write the manifest `{manifest}`"


def drain_step_commit(partitions: int) -> str:
    return (
        f"Advance the group's offsets on {partitions} partition(s) to the range ends, only if every range "
        "is written and the group is Empty (never backwards); on any failure nothing is committed"
    )


def drain_step_restore(workload: str | None) -> str:
    target = f"`{workload}`" if workload else "the workload"
    return f"Restore {target} to the replica count it had before the pause (also on failure)"


def drain_note_origin(topic: str, partition: int, origin: str, start: int, lost: int) -> str:
    if origin == "log_start_uncommitted":
        return f"Note: {topic}/{partition} has no committed offset: drained from the log start ({start:,})"
    return (
        f"Note: {topic}/{partition}: {lost:,} messages were deleted by retention before the group read "
        f"them; drained from the log start ({start:,})"
    )


def drain_note_replay_order(chunk: int) -> str:
    return (
        f"Note: replay writes the chunks of one partition in parallel, so the target does not keep their "
        f"order; a chunk larger than the partition's backlog (now {count(chunk)}) keeps it"
    )


def drain_offsets_unreadable(group: str, where: str, problem: str) -> str:
    return f"group {group!r}: cannot read the committed offset of {where}: {problem}"


def drain_group_unreadable(group: str, problem: str) -> str:
    return f"group {group!r}: cannot read its state: {problem}; nothing was committed"


def drain_group_active(group: str, state: str) -> str:
    return (
        f"group {group!r} is {state}, not Empty: its offsets cannot be moved while consumers run "
        "(stop them, or approve a plan that pauses them); nothing was committed"
    )


def drain_moved_back(group: str, behind: Sequence[str]) -> str:
    return (
        f"group {group!r}: committed offsets moved back since the plan ({'; '.join(behind)}); advancing "
        "would skip unread messages: make a new plan. Nothing was committed"
    )


def drain_commit_failed(group: str, problem: str) -> str:
    return f"group {group!r}: advancing the offsets failed: {problem}"


def drain_no_spark_submit(configured: str) -> str:
    return f"spark-submit not found: {configured!r} (set drain.spark_submit to its path)"


def drain_submit_failed(code: int, tail: str) -> str:
    return f"spark-submit exited with code {code} without a result; nothing was committed: {tail or 'no output'}"


def drain_incomplete(written: int, total: int, error: str | None) -> str:
    why = f": {error}" if error else ""
    return f"drain incomplete, {written} of {total} ranges written{why}; nothing was committed"


def drain_committed(group: str, committed: dict[tuple[str, int], int]) -> str:
    if not committed:
        return f"{group}: offsets already at or past the drained ends; nothing to commit"
    where = ", ".join(f"{t}/{p} -> {o:,}" for (t, p), o in sorted(committed.items()))
    return f"{group}: offsets advanced: {where}"


def drain_done(group: str, drained: int, ranges: int, partitions: int, seconds: float) -> str:
    speed = rate(drained / seconds) if seconds > 0 else "-"
    return (
        f"drained {count(drained)} messages of {group} in {ranges} ranges in {duration(seconds)} ({speed}); "
        f"offsets advanced on {partitions} partition(s)"
    )


def drain_crashed(group: str, exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"drain of {group} failed: {type(exc).__name__}: {first}; nothing was committed"


def drain_no_clients() -> str:
    return "the drain needs the cluster's AdminClient and its client settings (kafka_config); nothing was done"


def drain_cannot_pause(group: str) -> str:
    return (
        f"group {group!r} has running consumers and no executor or workload is configured to pause them; "
        "nothing was done"
    )


def drain_pause_failed(workload: str, detail: str) -> str:
    return f"could not scale {workload} to 0: {detail}; nothing was done"


def drain_paused(workload: str, replicas: int) -> str:
    return f"consumers paused: {workload} scaled from {replicas} to 0"


def drain_not_empty_after_pause(group: str, state: str, timeout: float) -> str:
    return f"group {group!r} still {state} {duration(timeout)} after its consumers were scaled to 0; nothing was done"


def drain_restored(workload: str, replicas: int) -> str:
    return f"consumers restored: {workload} back to {replicas} replica(s)"


def drain_restore_failed(workload: str, replicas: int, detail: str) -> str:
    return f"RESTORE FAILED: scale {workload} back to {replicas} by hand ({detail})"


def drain_restored_keda(workload: str, replicas: int, scaled_object: str, previous: str | None) -> str:
    pause = f"paused at {previous}" if previous is not None else "not paused: KEDA scales it again"
    return f"{drain_restored(workload, replicas)}; ScaledObject {scaled_object} {pause} as before"


def drain_cannot_hand_back(executor: str) -> str:
    return f"the {executor} executor cannot put a KEDA pause back"


def drain_keda_restore_failed(scaled_object: str, previous: str | None, detail: str) -> str:
    want = f"set to {previous}" if previous is not None else "removed"
    why = f" ({detail})" if detail else ""
    annotation = "autoscaling.keda.sh/paused-replicas"
    return f"RESTORE FAILED: ScaledObject {scaled_object} needs its {annotation} {want} by hand{why}"


def drain_no_executor() -> str:
    return "no executor is configured for it"


def drain_restore_lost(group: str, held: str) -> str:
    return f"RESTORE FAILED: what the drain of {group} paused is unreadable ({held!r}); restore its consumers by hand"


def drain_restored_after_interruption(ok: bool, detail: str) -> str:
    if ok:
        return f"The interrupted drain's pause is undone: {detail}"
    return f"The interrupted drain's pause could not be undone: {detail}"


def drain_started(group: str, ranges: int, offsets: int, master: str) -> str:
    return f"draining {group}: {count(offsets)} offsets in {ranges} ranges on {master}"


def drain_progress(group: str, done: int, total: int, drained: int, per_second: float) -> str:
    return f"draining {group}: {done}/{total} ranges, {count(drained)} messages, {rate(per_second)}"


def drain_verify_pending() -> str:
    return "no check since the drain yet"


def drain_verify_behind(partitions: int) -> str:
    return f"{partitions} drained partition(s) still behind the drained end: the offsets were not advanced"


def drain_verify_resolved(lag: int) -> str:
    return f"offsets past the drained backlog; lag now {count(lag)}, under every threshold"


def drain_verify_worse(lag: int, drained: int) -> str:
    return f"lag {count(lag)} is above the {count(drained)} drained: consumers fall behind faster than before"


def drain_verify_improving(lag: int) -> str:
    return f"offsets past the drained backlog; {count(lag)} newer messages wait"


def drain_needs_java(minimum: int, java: str | None, major: int | None) -> str:
    install = "install a Java runtime (Debian: apt install openjdk-17-jre-headless) or set JAVA_HOME"
    if java is None:
        return f"the drain runs Spark, which needs Java {minimum} or newer, and there is none: {install}"
    found = f"Java {major}" if major is not None else "a Java whose version it does not report"
    return f"the drain runs Spark, which needs Java {minimum} or newer; {java} is {found}: {install}"


def drain_needs_classic_spark(master: str) -> str:
    return (
        f"master {master} runs Spark in this process, and this install has only the Spark Connect client "
        "(pyspark-client): pip install 'lagbot[drain]' (PySpark with its jars; Java 17+) in an environment without "
        "pyspark-client, or drain through a Spark Connect server (master sc://HOST:PORT); nothing was done"
    )


def drain_sink_not_writable(sink: str, directory: str) -> str:
    return f"sink {sink}: cannot write there: {directory} is not writable by this user; nothing was done"


def drain_sink_not_a_directory(sink: str, path: str) -> str:
    return f"sink {sink}: cannot write there: {path} is a file, not a directory; nothing was done"


def drain_confirm(sink: str, offsets: int, partitions: int) -> str:
    """The drain's confirm dialog (at most 300 characters with a sink of at most 200): the sink first."""
    return (
        f"Writes {count(offsets)} messages to {sink}, then commits the group's offsets past them "
        f"({partitions} partition(s)). Recorded in the audit trail."
    )


# -- the drain sinks a policy rule allows -----------------------------------------------------------------


def policy_bad_sink_prefix(path: str) -> str:
    return (
        f"{path!r} is not a sink prefix: give an absolute path (/data/drains) or a URL (s3a://bucket/drains), "
        "without '..'"
    )


def sink_too_long(most: int) -> str:
    return f"the sink is longer than {most} characters"


def sink_internal_topic(topic: str) -> str:
    return f"`{topic}` is an internal Kafka topic: a drain never writes there"


def sink_topic_not_allowed(topic: str, pattern: str | None) -> str:
    allowed = f"topics matching `{pattern}`" if pattern else "no topic"
    return f"topic `{topic}` is not an allowed drain sink (the policy allows {allowed})"


def sink_path_not_allowed(url: str, prefixes: Sequence[str]) -> str:
    allowed = ", ".join(f"`{p}`" for p in prefixes) or "no path: only the configured default sink"
    return f"`{url}` is not under an allowed drain sink prefix (the policy allows {allowed})"
