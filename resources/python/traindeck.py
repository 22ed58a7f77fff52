"""Report metrics to TrainDeck from any Python training script (standard library only).

    import traindeck
    for step, batch in enumerate(loader, 1):
        loss = train_step(batch)
        traindeck.log(step=step, loss=loss, lr=lr)
        if traindeck.preempted():              # SIGTERM: preemption, budget stop or cancel
            save_checkpoint(traindeck.checkpoint_dir())
            sys.exit(traindeck.PREEMPTED_EXIT)

Lines follow backend/api/METRICS.md: one JSON object per line to the file descriptor in
TRAINDECK_METRICS_FD (set by the worker), or to stdout prefixed "@traindeck " when run by hand.
"""
import json
import math
import os
import signal
import sys
import tempfile
import time

PREEMPTED_EXIT = 75  # "stopped after writing a checkpoint": the worker resumes the job later

_stream = None
_prefix = ""
_preempted = False


def _output():
    global _stream, _prefix
    if _stream is None:
        fd = os.environ.get("TRAINDECK_METRICS_FD", "")
        try:
            _stream = os.fdopen(int(fd), "w", buffering=1, closefd=False) if fd else None
        except (ValueError, OSError):
            print(f"traindeck: TRAINDECK_METRICS_FD={fd!r} is not usable; writing metrics to stdout", file=sys.stderr)
            _stream = None
        if _stream is None:
            _stream, _prefix = sys.stdout, "@traindeck "
    return _stream


def _clean(value):
    # JSON has no NaN or infinity: they become null (and a NaN loss is still visible as a gap plus an event).
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):  # numpy / torch scalars
        return _clean(value.item())
    return value


def write(record):
    """Write one protocol record (a dict with "type")."""
    record = {key: _clean(value) for key, value in record.items()}
    record.setdefault("v", 1)
    record.setdefault("time", time.time())
    out = _output()
    out.write(_prefix + json.dumps(record, separators=(",", ":")) + "\n")
    out.flush()


def log(step, **metrics):
    """A point on every named curve at this step: log(step=12, loss=0.4, accuracy=0.91)."""
    write({"type": "metric", "step": int(step), **metrics})


def evaluate(split, step, **metrics):
    """Validation or test results: evaluate("val", step, loss=0.3, accuracy=0.9)."""
    write({"type": "eval", "split": split, "step": int(step), **metrics})


def config(values=None, goals=None, **more):
    """The run's parameters, shown, queried and compared as columns: config({"lr": 0.01, "model": {"depth": 4}})
    or config(lr=0.01, seed=3). Nested keys are flattened by TrainDeck (model.depth); call again to add or change
    keys. goals says which way is better for a metric when its name does not (loss-like names are minimised,
    accuracy-like maximised): config(goals={"bleu4": "max"})."""
    record = {"type": "config"}
    merged = dict(values or {}, **more)
    if merged:
        record["config"] = _plain(merged)
    if goals:
        record["goals"] = {str(name): str(goal) for name, goal in goals.items()}
    write(record)


def params(defaults=None):
    """This trial's parameters when a TrainDeck sweep runs the script (TRAINDECK_PARAMS: a JSON object of the
    sweep's keys, dotted for nested ones, e.g. {"optimizer.lr": 0.01, "hidden[0]": 128}), over `defaults` for a run
    outside a sweep: params({"optimizer.lr": 0.1}). The merged values are recorded as the run's config."""
    merged = dict(defaults or {})
    text = os.environ.get("TRAINDECK_PARAMS", "")
    if text:
        try:
            given = json.loads(text)
        except ValueError as error:
            raise SystemExit(f"traindeck: TRAINDECK_PARAMS is not JSON ({error}); the sweep that started this "
                             "script wrote it, so report the sweep's spec")
        if not isinstance(given, dict):
            raise SystemExit("traindeck: TRAINDECK_PARAMS must be a JSON object of parameter names to values")
        merged.update(given)
    if merged:
        config(merged)
    return merged


def _plain(value):
    # What json can write: numpy/torch scalars become numbers, tuples lists, other objects their text.
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    value = _clean(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def status(state, **fields):
    write({"type": "status", "state": state, **fields})


def checkpoint_dir():
    """The folder the worker keeps across restarts of this job (created if needed)."""
    path = os.environ.get("TRAINDECK_CHECKPOINT_DIR", "checkpoints")
    os.makedirs(path, exist_ok=True)
    return path


def resume_requested():
    """True when the worker restarts this job (after preemption or a failure) and a checkpoint should be loaded."""
    return os.environ.get("TRAINDECK_RESUME") == "1"


def save_atomically(path, write_to):
    """Call write_to(file_object) on a temporary file, fsync it and rename it over path: never half a checkpoint."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            write_to(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    write({"type": "checkpoint", "path": path})


def preempted():
    """True once the job was asked to stop (SIGTERM): checkpoint, then exit with PREEMPTED_EXIT."""
    return _preempted


def _on_term(signum, frame):
    global _preempted
    _preempted = True


signal.signal(signal.SIGTERM, _on_term)
