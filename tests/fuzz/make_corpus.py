#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/): a handful of valid and edge inputs each,
made from real things where there are real things (the first Fashion-MNIST test images, checkpoints written by
traindeck-train, a manifest with the hashes of real bytes). Deterministic, so a rerun changes nothing; crash-*
files (inputs that once crashed a target, kept as regressions) are never touched.

    python3 tests/fuzz/make_corpus.py [--train build/app/traindeck-train]

Without --train the checkpoint seeds are left as they are (they need a built traindeck-train).
"""
import argparse
import gzip
import hashlib
import json
import os
import struct
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FASHION = "/usr/share/datasets/fashion-mnist"
CHUNK = 4 << 20


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as out:
        out.write(data if isinstance(data, bytes) else data.encode())


def sha(data):
    return hashlib.sha256(data).hexdigest()


def jsonscan():
    write("jsonscan", "metric", '{"type":"metric","step":1,"epoch":1,"progress":0.0005,"loss":2.31,"accuracy":0.09,'
          '"lr":0.05,"samples_per_s":61234.0,"train_seconds":0.002,"v":1,"time":1796220791.9}')
    write("jsonscan", "eval", '{"type":"eval","split":"val","step":422,"epoch":1,"loss":0.39,"accuracy":0.854,'
          '"confusion":[[531,0,2],[1,499,0],[7,3,480]],"v":1,"time":1796220792.8}')
    write("jsonscan", "status-escapes", '{"type":"status","state":"running","model":"28x28x1 -> linear(256) \\u2192 relu",'
          '"note":"tab\\t quote\\" slash\\/ \\ud83d\\ude00","ok":true,"none":null,"neg":-0.0e-5}')
    write("jsonscan", "repair-utf8", b'{"type":"log","text":"caf\xe9 \xed\xa0\x80 ok \xc3\xa9"}')
    write("jsonscan", "repair-surrogate", '{"type":"metric","step":2,"name":"\\ud800x\\udc00"}')
    write("jsonscan", "repair-number", '{"type":"metric","step":3,"loss":1e999,"big":-123456789e400,"small":1e-999}')
    write("jsonscan", "deep", '{"a":' + "[" * 60 + "1" + "]" * 60 + "}")
    write("jsonscan", "not-an-object", "[1, 2, 3]")
    write("jsonscan", "spaces", " \t{ \"a\" : { } , \"b\" : [ ] }\r\n")


def jobrequest():
    mlp = json.load(open(os.path.join(HERE, "..", "..", "resources", "examples", "fashion-mlp.json")))
    write("jobrequest", "builtin", json.dumps({"builtin": mlp, "resources": {"cpus": 2, "memory_mb": 2048}, "priority": 5,
                                              "budget": 1.5, "max_restarts": 2}))
    write("jobrequest", "argv", json.dumps({"name": "script", "argv": ["/usr/bin/python3", "train.py", "--lr", "0.1"],
                                           "cwd": "/tmp", "env": {"SEED": "1", "MODE": "fast"},
                                           "resources": {"gpus": 0, "cpus": 1, "time_minutes": 30}}))
    write("jobrequest", "shell", json.dumps({"argv": ["echo start && sleep 1"], "shell": True}))
    write("jobrequest", "dataset", json.dumps({"argv": ["ls"], "dataset": "ab" * 32, "checkpoint_from": "0f" * 32}))
    write("jobrequest", "both", json.dumps({"argv": ["ls"], "builtin": {"model": "mlp"}}))
    write("jobrequest", "negative", json.dumps({"argv": ["ls"], "resources": {"gpus": -1}, "unknown": 1}))
    write("jobrequest", "types", '{"argv":"ls","priority":"high","env":{"A":1},"resources":[]}')


def manifest_of(files):
    """files: (path, bytes) sorted by path. The manifest and its version, as manifest.cpp makes them."""
    entries, canonical = [], "traindeck-manifest/1\n"
    for path, data in files:
        chunks = [sha(data[i:i + CHUNK]) for i in range(0, len(data), CHUNK)] if len(data) > CHUNK else [sha(data)]
        entries.append({"path": path, "size": len(data), "sha256": sha(data), "chunks": chunks})
        canonical += path + "\0" + str(len(data)) + "\0" + sha(data) + "\0" + ",".join(chunks) + "\n"
    return {"format": 1, "files": entries}, sha(canonical.encode())


def manifest():
    small, _ = manifest_of([("data/train.csv", b"x,y,label\n1,2,0\n3,4,1\n"), ("readme.txt", b"two rows\n")])
    write("manifest", "two-files", json.dumps(small))
    big, _ = manifest_of([("images/big.bin", bytes(9 << 20))])  # three chunks of a 9 MiB file
    write("manifest", "chunked", json.dumps(big))
    empty, _ = manifest_of([("empty", b"")])
    write("manifest", "empty-file", json.dumps(empty))
    bad = json.loads(json.dumps(small))
    bad["files"][0]["path"] = "data/../../etc/passwd"
    write("manifest", "escaping-path", json.dumps(bad))
    unsorted = json.loads(json.dumps(small))
    unsorted["files"].reverse()
    write("manifest", "unsorted", json.dumps(unsorted))
    write("manifest", "wrong-format", '{"format": 2, "files": []}')
    nested, _ = manifest_of([("a", b"1"), ("a-b", b"2"), ("a/b", b"3")])  # "a" is a file and a folder
    write("manifest", "file-and-folder", json.dumps(nested))


def idx_file(dims, data, gz=False):
    raw = bytes([0, 0, 8, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + bytes(data)
    return gzip.compress(raw, mtime=0) if gz else raw


def idx_input(labels, images):
    return struct.pack(">H", len(labels)) + labels + images


def idx():
    if os.path.exists(FASHION + "/t10k-images-idx3-ubyte.gz"):
        images = gzip.open(FASHION + "/t10k-images-idx3-ubyte.gz").read()[16:16 + 2 * 784]
        labels = gzip.open(FASHION + "/t10k-labels-idx1-ubyte.gz").read()[8:8 + 2]
        write("idx", "fashion-two", idx_input(idx_file([2], labels), idx_file([2, 28, 28], images)))
    write("idx", "tiny-gzip", idx_input(idx_file([3], [0, 1, 9], gz=True), idx_file([3, 2, 3], range(0, 255, 14), gz=True)))
    write("idx", "no-images", idx_input(idx_file([0], []), idx_file([0, 28, 28], [])))
    write("idx", "count-mismatch", idx_input(idx_file([2], [1, 2]), idx_file([1, 2, 2], [1, 2, 3, 4])))
    write("idx", "truncated", idx_input(idx_file([2], [1, 2]), idx_file([2, 4, 4], range(20))))


def csv():
    write("csv", "numeric", b"\x00" + b"f1,f2,f3,class\n0.5,1,-2e3,0\n1.5,2,3,2\n\n-0,4.25,1e-3,1\n")
    write("csv", "named-label", b"\x01" + b"width,label,height\r\n1,cat,2\r\n3,dog,4\r\n5,\"cat\",6\r\n")
    write("csv", "known-classes", b"\x03" + b"a,b,label\n1,2,dog\n3,4,cat\n")
    write("csv", "quoted", b"\x00" + b"\"name, with comma\",\"x\"\"y\",label\n\"1\",\"2\",\" 3 \"\n")
    write("csv", "ragged", b"\x00" + b"a,b,label\n1,2,3\n4,5\n")
    write("csv", "header-only", b"\x01" + b"a,label\n")


def checkpoint(train):
    """Real checkpoints: traindeck-train on a tiny CSV table, once with SGD momentum (one state buffer) and once with
    AdamW (two), each stopped after 3 steps."""
    with tempfile.TemporaryDirectory() as work:
        rows = "".join(f"{i % 5},{(i * 7) % 3},{i % 2}\n" for i in range(16))
        with open(os.path.join(work, "table.csv"), "w") as out:
            out.write("a,b,label\n" + rows)
        for name, optimizer in (("sgd-momentum", {"type": "sgd", "lr": 0.1, "momentum": 0.9}),
                                ("adamw", {"type": "adamw", "lr": 0.01})):
            spec = {"name": name, "model": "mlp", "hidden": [3],
                    "data": {"format": "csv", "train_csv": os.path.join(work, "table.csv"), "val_fraction": 0.25},
                    "optimizer": optimizer, "batch_size": 4, "epochs": 1, "max_steps": 3, "seed": 7}
            spec_path = os.path.join(work, name + ".json")
            with open(spec_path, "w") as out:
                json.dump(spec, out)
            checkpoints = os.path.join(work, name)
            subprocess.run([train, spec_path, "--checkpoint-dir", checkpoints, "--threads", "1"], check=True,
                           stdout=subprocess.DEVNULL)
            newest = sorted(os.listdir(checkpoints))[-1]
            data = open(os.path.join(checkpoints, newest), "rb").read()
            write("checkpoint", name, data)  # no .tdck: the repository ignores checkpoint files by that name
            if name == "adamw":
                write("checkpoint", "truncated", data[:40])


def workerserver():
    token = "Authorization: Bearer fuzz-token\n"
    mlp = {"name": "fuzz", "model": "mlp", "hidden": [4], "epochs": 1}

    def request(line, body="", headers=token):
        return line + "\n" + headers + "\n" + body

    def session(name, *requests):
        write("workerserver", name, "\n%%\n".join(requests))

    session("read-only", request("GET /v1/health"), request("GET /v1/resources"), request("GET /v1/jobs?state=queued"),
            request("GET /v1/datasets"))
    session("job-lifecycle",
            request("POST /v1/jobs", json.dumps({"builtin": mlp, "resources": {"cpus": 1}, "budget": 1})),
            request("GET /v1/jobs/1"),
            request("GET /v1/jobs/1/events?after=0&limit=10&wait_ms=5"),
            request("GET /v1/jobs/1/checkpoints"),
            request("GET /v1/jobs/1/checkpoints/ckpt-0000000003.tdck"),
            request("POST /v1/jobs/1/cancel"),
            request("POST /v1/jobs/1/resume", '{"budget": 2}'),
            request("POST /v1/events/watch", '{"after": {"1": 0, "2": 5}, "wait_ms": 10, "limit": 100}'),
            request("POST /v1/events/watch", '{"after": {"1": 0, "2": 5}, "wait_ms": 10, "limit": 100, "total": 150}'),
            request("GET /v1/jobs"))
    session("command-job", request("POST /v1/jobs", json.dumps({"argv": ["/bin/true"], "env": {"A": "1"}, "priority": 3})),
            request("GET /v1/jobs/2/events?after=abc"), request("POST /v1/jobs/999/cancel"))
    chunk = b"x,y,label\n1,2,0\n"
    files, version = manifest_of([("table.csv", chunk)])
    session("dataset-upload",
            request("POST /v1/chunks/missing", json.dumps({"chunks": [sha(chunk)]})),
            request("PUT /v1/chunks/" + sha(chunk), chunk.decode()),
            request("PUT /v1/datasets/" + version, json.dumps(files)),
            request("GET /v1/datasets/" + version),
            request("POST /v1/jobs", json.dumps({"argv": ["ls"], "dataset": version})))
    session("refusals", request("GET /v1/health", headers=""), request("GET /v1/health", headers="Authorization: Bearer wrong\n"),
            request("GET /v1/nowhere"), request("BREW /v1/jobs"), request("POST /v1/jobs", "{not json"),
            request("PUT /v1/chunks/" + "0" * 64, "bytes that do not hash to that"))


def runquery():
    write("runquery", "readme-example",
          'optimizer.lr < 0.01 and model == "cnn" and not tag:discarded or name ~ "seed.*"')
    write("runquery", "precedence", "(model == cnn or model == mlp) and not (seed in [1, 2, 3]) or NOT tag:'a b'")
    write("runquery", "times", "started>-2d and created >= 2026-12-01T10:30 and finished < 2026-12-10 and duration > 90m")
    write("runquery", "summaries", "best.val_accuracy > 0.9 and last.val/accuracy >= .5 and min.loss < 1e-3 and "
          "count.loss != 0 and last_step.loss <= 1000")
    write("runquery", "prefixes", "archived:any and starred:true and state:running or backend:\"gpu box\" or tag:lr-sweep:2")
    write("runquery", "values", "hidden[1] == -64 and augment = true and config.name = 'it\\'s' and model != resnet-50")
    write("runquery", "regex", 'note ~ "\\*\\*(bold|strong)\\*\\*" or id ~ \'^[0-9]{2,}$\' or spend ~ "0\\.\\d+"')
    write("runquery", "unterminated", 'name == "abc')
    write("runquery", "nested", "(" * 99 + "seed == 1" + ")" * 99)


FIXTURES = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "fixtures"))


def tfrecords(data):
    """The records of a TFRecord file, without their framing."""
    at, out = 0, []
    while at + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[at:at + 8])
        out.append(data[at + 12:at + 12 + length])
        at += 16 + length
    return out


def importers():
    # Seeds from the real files other tools wrote (shared/fixtures beside the checkout; left as they are without it).
    # The first byte selects the reader (importers_fuzz.cpp): 0 event file, 1 one Event, 2 MLflow, 3 CSV, 4 JSONL,
    # 5 a .wandb log, 6 one W&B Record.
    if not os.path.isdir(FIXTURES):
        print("make_corpus: no " + FIXTURES + ": the importers seeds are left as they are")
        return

    def fixture(path):
        with open(os.path.join(FIXTURES, path), "rb") as f:
            return f.read()

    def seed(name, selector, data):
        write("importers", name, bytes([selector]) + data)

    lightning_test = fixture("tfevents/lightning-torch-hparams/version_1/"
                             "events.out.tfevents.1677072198.MININT-M682FNV.1984.1")
    gan = tfrecords(fixture("tfevents/wandb-gan-histos-customscalars/events.out.tfevents.111.complex.localdomain"))
    seed("tfevents-guild-minimal", 0, fixture("tfevents/guild-tbwriter-minimal/events.out.tfevents.1662041974.calusa.97126.2"))
    seed("tfevents-js-hello", 0, fixture("tfevents/tfevents-js-hello/events.out.tfevents.1687811641.v2"))
    seed("tfevents-catboost", 0, fixture("tfevents/catboost-learn/catboost_info/learn/events.out.tfevents"))
    seed("tfevents-lightning-test-hparams", 0, lightning_test)
    seed("event-histogram", 1, next(r for r in gan if b"histogram" in r))
    seed("event-custom-scalars", 1, next(r for r in gan if b"custom_scalars" in r))
    seed("event-hparams-session-start", 1, next(r for r in tfrecords(lightning_test) if b"session_start_info" in r))
    seed("mlflow-metric-foo", 2, fixture("mlflow/packt-hpt-mlruns/mlruns/6/a3112407148b4966b929bc9f8784a3d3/metrics/foo"))
    seed("mlflow-run-meta", 2, fixture("mlflow/packt-hpt-mlruns/mlruns/0/bb55f3cea2cd4a61bfaa09714f19f792/meta.yaml"))
    seed("csv-catboost-learn-error", 3, fixture("tfevents/catboost-learn/catboost_info/learn_error.tsv"))
    seed("csv-quoted", 3, b'step,time,loss,note\n1,1700000000,2.5,"a, b"\n2,1700000001000,,x\n3,bad,nan,\n')
    seed("wandb-single-tiny", 5, fixture("wandb/leet-synthetic/wandb/single-tiny/wandb/run-20260102_030405-tiny0001/"
                                         "run-tiny0001.wandb"))
    seed("wandb-bad-crc", 5, fixture("wandb/leet-synthetic/wire/bad-crc.wandb"))
    unicode = fixture("wandb/leet-synthetic/wandb/edge-unicode/wandb/run-20260102_030405-uni00001/run-uni00001.wandb")
    (length,) = struct.unpack("<H", unicode[11:13])
    seed("wandb-record-run-unicode", 6, unicode[14:14 + length])
    seed("jsonl-mixed", 4, b'{"step": 1, "loss": 2.5, "train": {"acc": 0.1}}\n'
                          b'@traindeck {"type":"config","config":{"lr":0.1}}\n{"step": 2.5}\n[1]\n')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", help="traindeck-train, for the checkpoint seeds")
    args = parser.parse_args()
    jsonscan()
    jobrequest()
    manifest()
    idx()
    csv()
    workerserver()
    runquery()
    importers()
    if args.train:
        checkpoint(os.path.abspath(args.train))


if __name__ == "__main__":
    main()
