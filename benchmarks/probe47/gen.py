# ruff: noqa: E501, UP031, SIM115
# (a probe generator kept for provenance: long case tables, log calls written the way users write them)
"""probe47: real torchrun (gloo, CPU) runs with one injected fault each, delivered the way users hand logs over.

Each case runs `train.py` for real (under torchrun, two torchrun agents posing as two pods/hosts, or one
process per rank the way `srun` starts tasks), records every line with its arrival time and stream
(`capture.py`, what a log agent sees), then writes the logs in ONE shipper's or logger's shape. The truth
(`case.yaml`) comes from the injected fault, written before hanglens runs. Field names of each export, from
the public documentation of each tool:

- Docker json-file driver: one `{"log": "<line>\\n", "stream": "stdout|stderr", "time": "<RFC 3339 nano>"}`
  per line, file `<container id>-json.log`; `docker logs -t`: `<RFC 3339 nano> <line>`.
- `kubectl logs --prefix --timestamps`: `[pod/<pod>/<container>] <RFC 3339 nano> <line>`; `--timestamps` alone
  `<RFC 3339 nano> <line>`.
- `journalctl -o short-iso`: `<YYYY-MM-DDTHH:MM:SS+0000> <host> <ident>[<pid>]: <line>`; `-o json`: one object
  per entry, every value a string: `__REALTIME_TIMESTAMP` (microseconds since the epoch),
  `__MONOTONIC_TIMESTAMP`, `_HOSTNAME`, `SYSLOG_IDENTIFIER`, `_PID`, `_SYSTEMD_UNIT`, `_TRANSPORT` (`stdout`),
  `PRIORITY`, `MESSAGE`, ...
- Loki `logcli query --output=jsonl`: `{"labels": {...}, "line": "<line>", "timestamp": "<RFC 3339 nano>"}`;
  `--output=default`: `<RFC 3339, seconds> {<labels>} <line>`; both newest first (`--direction backward`
  is the default).
- Google Cloud Logging `gcloud logging read --format=json`: a JSON array of LogEntry objects (`textPayload`,
  `timestamp`, `receiveTimestamp`, `severity`, `logName`, `resource.type`/`resource.labels`, `labels`,
  `insertId`), newest first.
- CloudWatch Logs `aws logs filter-log-events`: `{"events": [{"logStreamName", "timestamp" (ms since the
  epoch), "message", "ingestionTime" (ms), "eventId"}], "searchedLogStreams": [...]}` (the CLI's JSON is
  indented by 4); Logs Insights "Export results" CSV: `@timestamp,@message,@logStream`, newest first.
- Kibana Discover CSV report: a header row of the chosen columns (`@timestamp`, `host.name`, ...,
  `message`), `@timestamp` in Kibana's default `dateFormat` `MMM D, YYYY @ HH:mm:ss.SSS`, newest first;
  Elasticsearch `_search` response: `{"took", "timed_out", "_shards", "hits": {"total", "max_score", "hits":
  [{"_index", "_id", "_score", "_source": {"@timestamp", "message", "host": {"name"}, ...}, "sort"}]}}`.
- Datadog Logs API v2 `GET /api/v2/logs/events` (`sort=-timestamp`): `{"data": [{"id", "type": "log",
  "attributes": {"timestamp", "host", "service", "status", "message", "tags", "attributes"}}], "links",
  "meta"}`.
- Slurm `srun -o %x-%j-%t.out`: one file per task, the task's stdout and stderr, no prefix.
- W&B `wandb/run-<date>_<time>-<id>/files/output.log`: the console of the process that called
  `wandb.init` (rank 0) as written.

Usage: gen.py OUTDIR [CASE...]   (one torchrun job at a time; each under `timeout`);
       gen.py --written OUTDIR   (the runs kept as tests/written_cases/r47-*).
Run it with the Python that has torch 2.13 (or set PROBE_PYTHON, TORCHRUN); scratch goes to PROBE47_WORK
(default <tmp>/hanglens-probe47).
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The interpreter with torch (and loguru, structlog, rich: PROBE47_PYLIB, if they are installed apart, is put on
# PYTHONPATH), its torchrun beside it, and the scratch folder; machine paths in the logs are rewritten below.
PY = os.environ.get("PROBE_PYTHON", sys.executable)
TORCHRUN = os.environ.get("TORCHRUN", str(Path(PY).with_name("torchrun")))
WORK = Path(os.environ.get("PROBE47_WORK", Path(tempfile.gettempdir()) / "hanglens-probe47"))
RAW = WORK / "raw"
STALL_DIR = WORK / "run"   # train.py's dlstall marker files
PYLIB = os.environ.get("PROBE47_PYLIB", "")
REWRITE = ((str(HERE), "/home/user/proj"), (str(Path(PY).parent.parent), "/home/user/.venv"),
           (str(WORK), "/home/user/run"))

# name, fault, fault rank, step, logmode, launch, nproc, delivery, category, accept, culprits, extra env
CASES = [
    ("crash-r1-docker-json", "crash", 1, 4, "print", "tee", 3, "docker_json", "rank_crash", None, [1], {}),
    ("crash-r2-stdlog-kubectl-prefix", "crash", 2, 3, "stdlog", "plain", 3, "kubectl_prefix", "rank_crash",
     None, [2], {}),
    ("skip-r1-loki-jsonl-newest", "skip", 1, 4, "print", "plain", 3, "loki_jsonl", "control_flow_divergence",
     ["control_flow_divergence", "collective_mismatch"], [1], {}),
    ("shape-r2-gcloud-array", "shape", 2, 3, "print", "tee", 3, "gcloud", "collective_mismatch",
     ["collective_mismatch", "control_flow_divergence"], [2], {}),
    ("dlkill-r1-journal-short-iso", "dlkill", 1, 4, "print", "plain", 3, "journal_iso", "dataloader_crash",
     ["dataloader_crash", "oom"], [1], {"WORKERS": "2"}),
    ("stall-r0-cloudwatch-events", "stall", 0, 4, "print", "plain", 3, "cloudwatch", "straggler",
     ["straggler", "control_flow_divergence"], [0], {}),
    ("sigkill-r2-journal-json", "sigkill", 2, 4, "print", "plain", 3, "journal_json", "rank_crash",
     ["rank_crash", "oom"], [2], {}),
    ("crash-r0-loguru-docker-t", "crash", 0, 3, "loguru", "plain", 3, "docker_t", "rank_crash", None, [0], {}),
    ("skip-r2-structlog-console", "skip", 2, 3, "structlog", "plain", 3, "console", "control_flow_divergence",
     ["control_flow_divergence", "collective_mismatch"], [2], {}),
    ("shape-r1-rich-console", "shape", 1, 4, "rich", "plain", 3, "console", "collective_mismatch",
     ["collective_mismatch", "control_flow_divergence"], [1], {}),
    ("dlstall-r1-kibana-csv", "dlstall", 1, 3, "print", "plain", 3, "kibana_csv", "dataloader_stall", None, [1],
     {"WORKERS": "2", "DL_TIMEOUT": "8"}),
    ("crash-r1-slurm-task-files", "crash", 1, 4, "print", "srun", 3, "slurm_files", "rank_crash", None, [1], {}),
    ("sigkill-r1-datadog-api", "sigkill", 1, 3, "print", "tee", 3, "datadog", "rank_crash", ["rank_crash", "oom"],
     [1], {}),
    ("dlkill-r0-wandb-output", "dlkill", 0, 4, "print", "tee", 3, "wandb", "dataloader_crash",
     ["dataloader_crash", "oom"], [0], {"WORKERS": "2"}),
    ("crash-r3-two-pods-loki-default", "crash", 3, 4, "print", "pods", 4, "loki_default", "rank_crash", None,
     [3], {}),
    ("skip-r0-stdlog-insights-csv", "skip", 0, 4, "stdlog", "plain", 3, "insights_csv", "control_flow_divergence",
     ["control_flow_divergence", "collective_mismatch"], [0],
     {"LOGFMT": "%(asctime)s [%(process)d] %(levelname)s [rank%(rank)s] %(message)s"}),
    ("stall-r2-loguru-kubectl-ts", "stall", 2, 3, "loguru", "plain", 3, "kubectl_ts", "straggler",
     ["straggler", "control_flow_divergence"], [2], {}),
    ("shape-r0-structlog-loki-jsonl", "shape", 0, 4, "structlog", "plain", 3, "loki_jsonl", "collective_mismatch",
     ["collective_mismatch", "control_flow_divergence"], [0], {}),
    ("dlstall-r2-es-search", "dlstall", 2, 4, "print", "plain", 3, "es_search", "dataloader_stall", None, [2],
     {"WORKERS": "2", "DL_TIMEOUT": "8"}),
    ("crash-r2-rich-elasticdump", "crash", 2, 4, "rich", "plain", 3, "elasticdump", "rank_crash", None, [2], {}),
    ("sigkill-r0-tee-docker-json", "sigkill", 0, 4, "print", "tee", 3, "docker_json", "rank_crash",
     ["rank_crash", "oom"], [0], {}),
    ("skip-r1-two-hosts-journal", "skip", 1, 3, "print", "pods", 4, "journal_hosts", "control_flow_divergence",
     ["control_flow_divergence", "collective_mismatch"], [1], {}),
    ("healthy-loki-jsonl", "healthy", 0, 0, "print", "plain", 3, "loki_jsonl", "none", None, [], {}),
    ("healthy-stdlog-kubectl-prefix", "healthy", 0, 0, "stdlog", "plain", 3, "kubectl_prefix", "none", None, [],
     {}),
    ("healthy-structlog-gcloud", "healthy", 0, 0, "structlog", "plain", 3, "gcloud", "none", None, [], {}),
    ("healthy-loguru-cloudwatch", "healthy", 0, 0, "loguru", "plain", 3, "cloudwatch", "none", None, [], {}),
    ("healthy-wandb-output", "healthy", 0, 0, "print", "tee", 3, "wandb", "none", None, [], {"WORKERS": "2"}),
    # second batch (written after the first fixes): two pods, each torchrun with --tee 3, merged exports
    ("skip-r2-two-pods-tee-loki-jsonl", "skip", 2, 4, "print", "pods_tee", 4, "loki_jsonl",
     "control_flow_divergence", ["control_flow_divergence", "collective_mismatch"], [2], {}),
    ("dlkill-r3-two-pods-tee-gcloud", "dlkill", 3, 4, "print", "pods_tee", 4, "gcloud", "dataloader_crash",
     ["dataloader_crash", "oom"], [3], {"WORKERS": "2"}),
    ("stall-r1-two-pods-tee-es-search", "stall", 1, 4, "print", "pods_tee", 4, "es_search", "straggler",
     ["straggler", "control_flow_divergence"], [1], {}),
    # third batch (written after the second round of fixes): structured records inside exports, other exports
    ("crash-r1-structlog-gke-jsonpayload", "crash", 1, 4, "structlog", "plain", 3, "gke_structured", "rank_crash",
     None, [1], {}),
    ("dlkill-r2-azure-containerlogv2-csv", "dlkill", 2, 4, "print", "plain", 3, "azure_csv", "dataloader_crash",
     ["dataloader_crash", "oom"], [2], {"WORKERS": "2"}),
    ("skip-r1-stdlog-fluentbit-jsonl", "skip", 1, 3, "stdlog", "plain", 3, "fluentbit", "control_flow_divergence",
     ["control_flow_divergence", "collective_mismatch"], [1], {}),
    ("shape-r2-compose-logs-t", "shape", 2, 4, "print", "plain", 3, "compose_t", "collective_mismatch",
     ["collective_mismatch", "control_flow_divergence"], [2], {}),
    ("sigkill-r1-journal-short", "sigkill", 1, 4, "print", "plain", 3, "journal_short", "rank_crash",
     ["rank_crash", "oom"], [1], {}),
    ("stall-r2-splunk-csv", "stall", 2, 3, "print", "tee", 3, "splunk_csv", "straggler",
     ["straggler", "control_flow_divergence"], [2], {}),
    ("healthy-structlog-gke-jsonpayload", "healthy", 0, 0, "structlog", "plain", 3, "gke_structured", "none",
     None, [], {}),
]

# The runs kept in tests/written_cases (r47-*): other faults, ranks and shapes than the probe's cases.
WRITTEN = [
    ("cloudwatch-events-doc-crash-r2-ws3", "crash", 2, 3, "print", "plain", 3, "cloudwatch", "rank_crash", None,
     [2], {}),
    ("es-search-doc-dlkill-r1-ws3", "dlkill", 1, 3, "print", "plain", 3, "es_search", "dataloader_crash",
     ["dataloader_crash", "oom"], [1], {"WORKERS": "2"}),
    ("datadog-api-doc-shape-r2-tee-ws3", "shape", 2, 4, "print", "tee", 3, "datadog", "collective_mismatch",
     ["collective_mismatch", "control_flow_divergence"], [2], {}),
    ("kubectl-prefix-stdlog-stall-r1-ws3", "stall", 1, 3, "stdlog", "plain", 3, "kubectl_prefix", "straggler",
     ["straggler", "control_flow_divergence"], [1], {}),
    ("logcli-default-newest-first-two-pods-crash-r2-ws4", "crash", 2, 3, "print", "pods", 4, "loki_default",
     "rank_crash", None, [2], {}),
    ("gke-structlog-jsonpayload-dlkill-r0-ws3", "dlkill", 0, 3, "structlog", "plain", 3, "gke_structured",
     "dataloader_crash", ["dataloader_crash", "oom"], [0], {"WORKERS": "2"}),
]

PORT = 29700


def rewrite(line: str) -> str:
    for a, b in REWRITE:
        line = line.replace(a, b)
    return line


def run_case(name, fault, frank, step, logmode, launch, nproc, extra):
    """Run the job once; return a list of captures [(label, records)]."""
    global PORT
    PORT += 1
    for p in STALL_DIR.glob("stall.*"):
        p.unlink()
    env = dict(os.environ, FAULT=fault, FAULT_RANK=str(frank), FAULT_STEP=str(step), LOGMODE=logmode,
               PYTHONPATH=PYLIB, PYTHONUNBUFFERED="1", STALL_DIR=str(STALL_DIR), **extra)
    train = str(HERE / "train.py")
    cap = [PY, str(HERE / "capture.py")]
    if launch in ("plain", "tee"):
        out = RAW / f"{name}.jsonl"
        cmd = [TORCHRUN, "--nproc-per-node", str(nproc), "--master-port", str(PORT)]
        if launch == "tee":
            cmd += ["--tee", "3"]
        subprocess.run(["timeout", "150", *cap, str(out), "--", *cmd, train], env=env)
        return [("trainer-0", load(out))]
    if launch in ("pods", "pods_tee"):
        procs, outs = [], []
        for node in (0, 1):
            out = RAW / f"{name}.{node}.jsonl"
            cmd = [TORCHRUN, "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", str(nproc // 2),
                   "--master-addr", "127.0.0.1", "--master-port", str(PORT)]
            if launch == "pods_tee":
                cmd += ["--tee", "3"]
            procs.append(subprocess.Popen(["timeout", "150", *cap, str(out), "--", *cmd, train], env=env))
            outs.append(out)
        for p in procs:
            p.wait()
        return [(f"trainer-{i}", load(o)) for i, o in enumerate(outs)]
    if launch == "srun":
        procs, outs = [], []
        for r in range(nproc):
            out = RAW / f"{name}.task{r}.jsonl"
            e = dict(env, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(nproc), LOCAL_WORLD_SIZE=str(nproc),
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=str(PORT))
            procs.append(subprocess.Popen(["timeout", "120", *cap, str(out), "--", PY, train], env=e))
            outs.append(out)
        for p in procs:
            p.wait()
        return [(f"task{i}", load(o)) for i, o in enumerate(outs)]
    raise ValueError(launch)


def load(path):
    recs = [json.loads(x) for x in open(path)]
    for r in recs:
        r["line"] = rewrite(r["line"])
    return recs


def rfc(t, digits=9, z="Z"):
    d = dt.datetime.fromtimestamp(t, dt.UTC)
    frac = f"{t % 1:.9f}"[2:2 + digits]
    return d.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if digits else "") + z


def hid(*parts):
    return hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest()


def merged(caps):
    """(label, record) of every capture, oldest first."""
    allr = [(lab, r) for lab, recs in caps for r in recs]
    allr.sort(key=lambda x: x[1]["t"])
    return allr


def deliver(kind, caps, d: Path):
    d.mkdir(parents=True, exist_ok=True)
    recs = merged(caps)
    w = lambda fn, text: (d / fn).write_text(text)  # noqa: E731
    if kind == "console":
        w("train.log", "".join(r["line"] + "\n" for _, r in recs))
    elif kind == "docker_json":
        cid = hid(d.name)[:40] + hid(d.name, 2)[:24]
        w(f"{cid}-json.log", "".join(json.dumps({"log": r["line"] + "\n", "stream": r["stream"],
                                                 "time": rfc(r["t"])}, separators=(",", ":")) + "\n"
                                     for _, r in recs))
    elif kind == "docker_t":
        w("trainer.log", "".join(f"{rfc(r['t'])} {r['line']}\n" for _, r in recs))
    elif kind == "kubectl_prefix":
        w("pod-logs.txt", "".join(f"[pod/{lab}/pytorch] {rfc(r['t'])} {r['line']}\n" for lab, r in recs))
    elif kind == "kubectl_ts":
        w("trainer-0.log", "".join(f"{rfc(r['t'])} {r['line']}\n" for _, r in recs))
    elif kind in ("journal_iso", "journal_hosts"):
        hosts = {}
        for lab, r in recs:
            host = "gpu-node-%d" % (int(lab.rsplit("-", 1)[1]) + 1)
            stamp = dt.datetime.fromtimestamp(r["t"], dt.UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")
            hosts.setdefault(host, []).append(f"{stamp} {host} torchrun[{41200 + len(host) * 7}]: {r['line']}\n")
        if kind == "journal_iso":
            w("journal.txt", "".join(hosts.popitem()[1]))
        else:
            for host, lines in hosts.items():
                w(f"{host}.journal.txt", "".join(lines))
    elif kind == "journal_json":
        out = []
        for i, (_, r) in enumerate(recs):
            us = int(r["t"] * 1e6)
            out.append(json.dumps({
                "__CURSOR": f"s={hid('boot')[:32]};i={0x1a2b3 + i:x};b={hid('b')[:32]};m={us % 99999:x};t={us:x}",
                "__REALTIME_TIMESTAMP": str(us), "__MONOTONIC_TIMESTAMP": str(us - 1733000000000000),
                "_BOOT_ID": hid("b")[:32], "PRIORITY": "6", "SYSLOG_FACILITY": "3", "_UID": "1000",
                "_GID": "1000", "_SYSTEMD_SLICE": "system.slice", "_TRANSPORT": "stdout",
                "_HOSTNAME": "gpu-node-1", "SYSLOG_IDENTIFIER": "torchrun", "_PID": "41230",
                "_COMM": "torchrun", "_EXE": "/home/user/.venv/bin/python3.11",
                "_CMDLINE": "/home/user/.venv/bin/python3.11 /home/user/.venv/bin/torchrun --nproc-per-node 3 "
                            "/home/user/proj/train.py",
                "_SYSTEMD_UNIT": "train.service", "_STREAM_ID": hid("s")[:32], "MESSAGE": r["line"]}) + "\n")
        w("train.service.json", "".join(out))
    elif kind == "loki_jsonl":
        out = [json.dumps({"labels": {"container": "pytorch", "namespace": "ml", "pod": lab, "stream": r["stream"],
                                      "job": "ml/trainer"}, "line": r["line"], "timestamp": rfc(r["t"])}) + "\n"
               for lab, r in reversed(recs)]
        w("loki-export.jsonl", "".join(out))
    elif kind == "loki_default":
        out = [f"{rfc(r['t'], 0)} {{pod=\"{lab}\", stream=\"{r['stream']}\"}} {r['line']}\n"
               for lab, r in reversed(recs)]
        w("logcli-output.txt", "Common labels: {container=\"pytorch\", namespace=\"ml\"}\n" + "".join(out))
    elif kind == "gcloud":
        ents = []
        for i, (lab, r) in enumerate(reversed(recs)):
            ents.append({
                "insertId": hid(d.name, i)[:16], "labels": {"k8s-pod/job-name": "trainer",
                                                           "compute.googleapis.com/resource_name": "gke-pool-1-a"},
                "logName": f"projects/ml-prod/logs/{r['stream']}", "receiveTimestamp": rfc(r["t"] + 0.8),
                "resource": {"labels": {"cluster_name": "train-cluster", "container_name": "pytorch",
                                        "location": "us-central1", "namespace_name": "ml", "pod_name": lab,
                                        "project_id": "ml-prod"}, "type": "k8s_container"},
                "severity": "ERROR" if r["stream"] == "stderr" else "INFO", "textPayload": r["line"],
                "timestamp": rfc(r["t"])})
        w("gcloud-logs.json", json.dumps(ents, indent=2) + "\n")
    elif kind == "cloudwatch":
        evs = [{"logStreamName": f"trainer/pytorch/{hid(lab)[:32]}", "timestamp": int(r["t"] * 1000),
                "message": r["line"], "ingestionTime": int(r["t"] * 1000) + 412,
                "eventId": str(int(hid(i))[:56] if False else int(hid(i), 16) % 10**56)}
               for i, (lab, r) in enumerate(recs)]
        streams = sorted({e["logStreamName"] for e in evs})
        w("filter-log-events.json", json.dumps({"events": evs, "searchedLogStreams": [
            {"logStreamName": s, "searchedCompletely": True} for s in streams]}, indent=4) + "\n")
    elif kind == "insights_csv":
        buf = io.StringIO()
        wr = csv.writer(buf, lineterminator="\n")
        wr.writerow(["@timestamp", "@message", "@logStream"])
        for lab, r in reversed(recs):
            ts = dt.datetime.fromtimestamp(r["t"], dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
            wr.writerow([ts, r["line"], f"trainer/pytorch/{hid(lab)[:32]}"])
        w("logs-insights-results.csv", buf.getvalue())
    elif kind == "kibana_csv":
        buf = io.StringIO()
        wr = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
        wr.writerow(["@timestamp", "host.name", "kubernetes.pod.name", "stream", "message"])
        for lab, r in reversed(recs):
            t = dt.datetime.fromtimestamp(r["t"], dt.UTC)
            ts = t.strftime("%b ") + str(t.day) + t.strftime(", %Y @ %H:%M:%S.%f")[:-3]
            wr.writerow([ts, "gke-pool-1-a", lab, r["stream"], r["line"]])
        w("discover-export.csv", buf.getvalue())
    elif kind == "es_search":
        hits = [{"_index": ".ds-filebeat-8.15.0-2026.12.05-000001", "_id": hid(d.name, i)[:20], "_score": None,
                 "_source": {"@timestamp": rfc(r["t"], 3), "message": r["line"], "stream": r["stream"],
                             "host": {"name": "gke-pool-1-a"}, "kubernetes": {"pod": {"name": lab},
                                                                              "container": {"name": "pytorch"}},
                             "log": {"file": {"path": f"/var/log/containers/{lab}_ml_pytorch.log"}}},
                 "sort": [int(r["t"] * 1000)]}
                for i, (lab, r) in reversed(list(enumerate(recs)))]
        doc = {"took": 41, "timed_out": False, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
               "hits": {"total": {"value": len(hits), "relation": "eq"}, "max_score": None, "hits": hits}}
        w("search-response.json", json.dumps(doc, indent=2) + "\n")
    elif kind == "elasticdump":
        out = [json.dumps({"_index": "filebeat-2026.12.05", "_id": hid(d.name, i)[:20], "_score": 1,
                           "_source": {"@timestamp": rfc(r["t"], 3), "message": r["line"], "stream": r["stream"],
                                       "host": {"name": "gpu-node-1"}, "agent": {"type": "filebeat"}}}) + "\n"
               for i, (_, r) in enumerate(recs)]
        w("filebeat-dump.ndjson", "".join(out))
    elif kind == "datadog":
        data = [{"id": "AQAAAZ" + hid(d.name, i)[:30], "type": "log",
                 "attributes": {"service": "trainer", "host": "gpu-node-1",
                                "status": "error" if r["stream"] == "stderr" else "info",
                                "timestamp": rfc(r["t"], 3), "message": r["line"],
                                "tags": ["source:pytorch", "env:prod", f"pod_name:{lab}"],
                                "attributes": {"service": "trainer", "status": "info"}}}
                for i, (lab, r) in reversed(list(enumerate(recs)))]
        doc = {"data": data, "links": {"next": None}, "meta": {"elapsed": 132, "request_id": hid(d.name)[:24],
                                                              "status": "done", "page": {"after": None}}}
        w("datadog-logs.json", json.dumps(doc, indent=2) + "\n")
    elif kind == "gke_structured":
        # GKE's logging agent parses a JSON line into jsonPayload (its `timestamp`/`time` become the entry's
        # time, `severity` its severity); other lines stay textPayload.
        ents = []
        for i, (lab, r) in enumerate(reversed(recs)):
            e = {"insertId": hid(d.name, i)[:16], "logName": f"projects/ml-prod/logs/{r['stream']}",
                 "receiveTimestamp": rfc(r["t"] + 0.8),
                 "resource": {"labels": {"cluster_name": "train-cluster", "container_name": "pytorch",
                                         "location": "us-central1", "namespace_name": "ml", "pod_name": lab,
                                         "project_id": "ml-prod"}, "type": "k8s_container"},
                 "severity": "ERROR" if r["stream"] == "stderr" else "INFO", "timestamp": rfc(r["t"])}
            try:
                payload = json.loads(r["line"])
            except ValueError:
                payload = None
            if isinstance(payload, dict):
                payload.pop("timestamp", None)
                e["jsonPayload"] = payload
            else:
                e["textPayload"] = r["line"]
            ents.append(e)
        w("gke-logs.json", json.dumps(ents, indent=2) + "\n")
    elif kind == "azure_csv":
        buf = io.StringIO()
        wr = csv.writer(buf, lineterminator="\n")
        wr.writerow(["TimeGenerated [UTC]", "Computer", "PodNamespace", "PodName", "ContainerName", "LogSource",
                     "LogMessage"])
        for lab, r in recs:
            t = dt.datetime.fromtimestamp(r["t"], dt.UTC)
            h12 = t.hour % 12 or 12
            ts = f"{t.month}/{t.day}/{t.year}, {h12}:{t:%M:%S}.{t.microsecond // 1000:03d} {'PM' if t.hour >= 12 else 'AM'}"
            wr.writerow([ts, "aks-nodepool1-0", "ml", lab, "pytorch", r["stream"], r["line"]])
        w("query_data.csv", buf.getvalue())
    elif kind == "fluentbit":
        w("fluent-bit.jsonl", "".join(json.dumps({
            "date": round(r["t"], 6), "log": r["line"] + "\n", "stream": r["stream"],
            "kubernetes": {"pod_name": lab, "namespace_name": "ml", "container_name": "pytorch",
                           "host": "gke-pool-1-a"}}, separators=(",", ":")) + "\n" for lab, r in recs))
    elif kind == "compose_t":
        w("compose.log", "".join(f"trainer-1  | {rfc(r['t'])} {r['line']}\n" for _, r in recs))
    elif kind == "journal_short":
        w("journal.txt", "".join(
            dt.datetime.fromtimestamp(r["t"], dt.UTC).strftime("%b %d %H:%M:%S") + f" gpu-node-1 torchrun[41230]: "
            f"{r['line']}\n" for _, r in recs))
    elif kind == "splunk_csv":
        buf = io.StringIO()
        wr = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
        wr.writerow(["_time", "host", "source", "sourcetype", "_raw"])
        for _, r in reversed(recs):
            t = dt.datetime.fromtimestamp(r["t"], dt.UTC)
            wr.writerow([t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}+00:00", "gpu-node-1",
                         "/var/log/train/console.log", "pytorch:console", r["line"]])
        w("splunk-export.csv", buf.getvalue())
    elif kind == "slurm_files":
        for lab, rs in caps:
            task = lab.removeprefix("task")
            w(f"train-48213-{task}.out", "".join(r["line"] + "\n" for r in rs))
    elif kind == "wandb":
        lines = [r["line"][len("[default0]:"):] for _, r in recs if r["line"].startswith("[default0]:")]
        run = d / "wandb" / "run-20261205_212933-k3v9x2qd" / "files"
        run.mkdir(parents=True, exist_ok=True)
        (run / "output.log").write_text("".join(x + "\n" for x in lines))
    else:
        raise ValueError(kind)


def truth(name, fault, frank, launch, logmode, kind, cat, accept, culprits, nproc):
    how = {"plain": f"torchrun --nproc-per-node {nproc}", "tee": f"torchrun --nproc-per-node {nproc} --tee 3",
           "pods": "two torchrun agents (--nnodes 2, 2 ranks each) posing as two pods/hosts",
           "pods_tee": "two torchrun agents (--nnodes 2, 2 ranks each, --tee 3) posing as two pods",
           "srun": f"{nproc} processes started the way srun starts one task per rank"}[launch]
    lines = [f"# real run (probe47, benchmarks/probe47/gen.py): torch 2.13 CPU, DDP on gloo, {how}; "
             f"logging {logmode}; injected fault {fault} on rank {frank}; delivered as {kind}",
             f"category: {cat}"]
    if accept:
        lines.append(f"accept: [{', '.join(accept)}]")
    lines.append(f"culprit_ranks: [{', '.join(map(str, culprits))}]")
    return "\n".join(lines) + "\n"


def main():
    written = sys.argv[1] == "--written"
    args = sys.argv[2:] if written else sys.argv[1:]
    outdir = Path(args[0])
    want = set(args[1:])
    RAW.mkdir(parents=True, exist_ok=True)
    STALL_DIR.mkdir(parents=True, exist_ok=True)
    for i, c in enumerate(WRITTEN if written else CASES, 1):
        name, fault, frank, step, logmode, launch, nproc, kind, cat, accept, culprits, extra = c
        cname = f"r47-{name}" if written else f"p47-{i:02d}-{name}"
        if want and cname not in want and name not in want:
            continue
        d = outdir / cname
        d.mkdir(parents=True, exist_ok=True)
        (d / "case.yaml").write_text(truth(cname, fault, frank, launch, logmode, kind, cat, accept, culprits, nproc))
        t0 = time.time()
        caps = run_case(cname, fault, frank, step, logmode, launch, nproc, extra)
        deliver(kind, caps, d)
        print(f"{cname}: {sum(len(r) for _, r in caps)} lines, {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
