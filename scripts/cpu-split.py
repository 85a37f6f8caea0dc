#!/usr/bin/env python3
"""Where a lab run's CPU goes, phase by phase (docs/lab/durable.md, "Issue #57: where the timed rounds' CPU goes").

Runs COMMAND (its output shown and kept in LOG) while sampling, every 50 ms, the CPU time of every `java`
process and every PostgreSQL process on the machine (from /proc/PID/task/*/schedstat, in nanoseconds) and the
machine's idle time (/proc/stat). The command prints a line `phase NAME START END` (wall-clock epoch
milliseconds) for each phase it times, as `./weir lab durable --only workflow` does for its timed rounds;
after it ends, each phase's wall time on every core is split into java, PostgreSQL, idle and other time (a process counts from the
first sample that saw it; one that ended inside a phase, up to the last). Linux only; run it on a quiet
machine, since every java and postgres process is counted:

  scripts/cpu-split.py /tmp/split.log -- ./weir lab durable --only workflow --url postgresql://...

With --by-process first, each phase's java time is also shown per JVM (its pid and main class or
jar), and PostgreSQL's by process title (the backends together, autovacuum, the checkpointer, ...).
"""
import os
import re
import subprocess
import sys
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def kind(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
    except OSError:
        return None
    if comm == "java":
        return "java"
    if comm.startswith("postgres") or comm.startswith("postmaster"):
        return "postgres"
    return None


def on_cpu(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


def main_class(pid):
    """The last word of a JVM's command line that names a class or a jar, for --by-process."""
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            words = f.read().split("\0")
    except OSError:
        return "?"
    named = [w for w in words if w.startswith("weir.") or w.endswith(".jar")]
    return named[-1].rsplit("/", 1)[-1] if named else "?"


def server_title(pid):
    """A PostgreSQL process's title without its client's address and state, for --by-process."""
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            title = f.read().replace("\0", " ").strip()
    except OSError:
        return "?"
    if "(" in title:  # a backend: "postgres: USER DB HOST(PORT) STATE"
        return " ".join(title.split(" ")[:3]) + " (backends)"
    return title


def sample():
    procs = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        k = kind(pid)
        if k is None:
            continue
        try:
            procs[pid] = (k, on_cpu(pid))
        except OSError:
            continue
    with open("/proc/stat") as f:
        fields = f.readline().split()
    idle = (int(fields[4]) + int(fields[5])) * 1_000_000_000 // TICK
    return time.time_ns() // 1_000_000, procs, idle


def split(samples, start, end):
    """Nanoseconds of java, postgres and idle between the samples nearest to start and end."""
    inside = [s for s in samples if start <= s[0] <= end]
    if len(inside) < 2:
        return None
    first, last = inside[0], inside[-1]
    lo, hi = {}, {}
    for _, procs, _ in inside:
        for pid, (k, ns) in procs.items():
            if pid not in lo:
                # a process started inside the phase spent all its time in it
                lo[pid] = ns if pid in first[1] else 0
            hi[pid] = (k, ns)
    out = {"java": 0, "postgres": 0}
    javas = {}
    for pid, (k, ns) in hi.items():
        out[k] += ns - lo[pid]
        javas[pid] = ns - lo[pid]
    return last[0] - first[0], out["java"], out["postgres"], last[2] - first[2], javas


def main():
    args = sys.argv[1:]
    by_process = bool(args) and args[0] == "--by-process"
    if by_process:
        args = args[1:]
    if len(args) < 3 or args[1] != "--":
        sys.exit(__doc__)
    log, command = args[0], args[2:]
    names = {}
    samples, stop = [], threading.Event()

    def sampler():
        while not stop.is_set():
            s = sample()
            samples.append(s)
            if by_process:
                for pid, (k, _) in s[1].items():
                    if pid not in names:
                        names[pid] = (k, main_class(pid) if k == "java" else server_title(pid))
            time.sleep(0.05)

    t = threading.Thread(target=sampler, daemon=True)
    t.start()
    phases = []
    with open(log, "w") as out:
        p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in p.stdout:
            sys.stdout.write(line)
            out.write(line)
            m = re.match(r"\s*phase (\S+) (\d+) (\d+)\s*$", line)
            if m:
                phases.append((m.group(1), int(m.group(2)), int(m.group(3))))
        rc = p.wait()
    stop.set()
    t.join()
    cores = os.cpu_count()
    print(f"\n{cores} cores; other: the cores' time that is neither idle nor spent by java or postgres (this")
    print("script's samples, the kernel's own work, other processes)")
    print(f"{'phase':24} {'wall ms':>8} {'java ms':>8} {'postgres ms':>12} {'idle ms':>8} {'other ms':>9}")
    for name, start, end in phases:
        s = split(samples, start, end)
        if s is None:
            print(f"{name:24} too short to sample")
            continue
        wall, java, pg, idle, javas = s
        other = cores * wall - (java + pg + idle) / 1e6
        print(f"{name:24} {wall:8d} {java / 1e6:8.0f} {pg / 1e6:12.0f} {idle / 1e6:8.0f} {other:9.0f}")
        if by_process:
            java_ms = {pid: ns for pid, ns in javas.items() if names.get(pid, ("?",))[0] == "java"}
            for pid, ns in sorted(java_ms.items(), key=lambda x: -x[1]):
                if ns >= 1_000_000:
                    print(f"  java {pid} {names[pid][1]:40} {ns / 1e6:8.0f}")
            # the server's processes by their title: backends, autovacuum, checkpointer, WAL writer
            by_title = {}
            for pid, ns in javas.items():
                k, title = names.get(pid, ("?", "?"))
                if k == "postgres":
                    by_title[title] = by_title.get(title, 0) + ns
            for title, ns in sorted(by_title.items(), key=lambda x: -x[1]):
                if ns >= 1_000_000:
                    print(f"  postgres {title:40} {ns / 1e6:8.0f}")
    sys.exit(rc)


if __name__ == "__main__":
    main()
