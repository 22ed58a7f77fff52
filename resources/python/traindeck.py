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

Scripts written for TensorBoard change one line, `from torch.utils.tensorboard import SummaryWriter` to
`from traindeck import SummaryWriter`: under a worker it speaks this protocol, run by hand it writes TensorBoard
event files that TensorBoard and TrainDeck's importer both read (see SummaryWriter).
"""
import atexit
import bisect
import json
import math
import os
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import weakref
import zlib
from datetime import datetime

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


# ---- A drop-in for torch.utils.tensorboard.SummaryWriter -------------------------------------------------------------
# TensorBoard's event files written by hand, standard library only. The format, as backend/importers/tfevents.cpp reads
# it: TFRecord framing (uint64 length, masked CRC-32C of those 8 bytes, the data, masked CRC-32C of the data), each
# record one Event protobuf:
#   Event          1 wall_time (double) · 2 step (int64) · 3 file_version · 5 summary · 10 source_metadata
#   Summary        1 value (repeated): 1 tag · 2 simple_value (float) · 4 image · 5 histo · 8 tensor · 9 metadata
#   Image          1 height · 2 width · 3 colorspace · 4 encoded_image_string
#   HistogramProto 1 min · 2 max · 3 num · 4 sum · 5 sum_squares (doubles) · 6 bucket_limit · 7 bucket (packed doubles)
#   metadata       1 plugin_data {1 plugin_name · 2 content}

def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()


def _masked_crc32c(data):
    # CRC-32C (Castagnoli), masked as TFRecord stores it: a CRC of data that holds CRCs must not look like one.
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _tfrecord(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", _masked_crc32c(length)) + data + struct.pack("<I", _masked_crc32c(data))


def _varint(value):
    value &= 0xFFFFFFFFFFFFFFFF  # a negative int64 as protobuf writes it: ten bytes of two's complement
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _pb_varint(number, value):
    return _varint(number << 3) + _varint(value)


def _pb_double(number, value):
    return _varint(number << 3 | 1) + struct.pack("<d", value)


def _pb_float(number, value):
    try:
        packed = struct.pack("<f", value)
    except OverflowError:  # beyond float32's range: infinity, as the C++ writer's cast gives
        packed = struct.pack("<f", math.copysign(math.inf, value))
    return _varint(number << 3 | 5) + packed


def _pb_bytes(number, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _pb_packed_doubles(number, values):
    return _pb_bytes(number, struct.pack("<%dd" % len(values), *values))


def _event(wall_time, step, summary_values):
    # Field for field what encode_scalar_event in backend/importers/tfevents.cpp writes (a test holds the two equal):
    # the step left out when it is 0, as proto3 does.
    out = _pb_double(1, wall_time)
    if step:
        out += _pb_varint(2, step)
    return out + _pb_bytes(5, b"".join(_pb_bytes(1, value) for value in summary_values))


def _file_version_event(wall_time):
    return _pb_double(1, wall_time) + _pb_bytes(3, "brain.Event:2") + _pb_bytes(10, _pb_bytes(1, "traindeck"))


def _scalar_value(tag, value):
    return _pb_bytes(1, tag) + _pb_float(2, value)


def _google_value(value):
    # google.protobuf.Value: 1 null · 2 number · 3 string · 4 bool (bool before number: True is an int to Python).
    if isinstance(value, bool):
        return _pb_varint(4, int(value))
    if isinstance(value, (int, float)):
        return _pb_double(2, float(value))
    if isinstance(value, str):
        return _pb_bytes(3, value)
    return _pb_bytes(3, json.dumps(_plain(value)))  # the hparams plugin shows scalars only: others as their JSON


def _hparams_value(hparams, start_time):
    # The hparams plugin's session_start_info, as TensorBoard's hparams summary and tfevents.cpp's exporter write it:
    # HParamsPluginData{3 session_start_info{1 hparams: map<string, Value>, 5 start_time_secs}} in the metadata of a
    # placeholder DT_FLOAT scalar tensor.
    start = b"".join(_pb_bytes(1, _pb_bytes(1, str(key)) + _pb_bytes(2, _google_value(value)))
                     for key, value in hparams.items())
    start += _pb_double(5, start_time)
    metadata = _pb_bytes(1, _pb_bytes(1, "hparams") + _pb_bytes(2, _pb_bytes(3, start)))
    tensor = _pb_varint(1, 1) + _pb_bytes(2, b"") + _pb_float(5, 0.0)
    return _pb_bytes(1, "_hparams_/session_start_info") + _pb_bytes(9, metadata) + _pb_bytes(8, tensor)


def _histogram_value(tag, values, bins, max_bins):
    # As torch's make_histogram: numpy.histogram's buckets ([a, b), the last one [a, b]; values outside all of them
    # are not counted), at most max_bins by merging neighbours, then cut to the buckets that hold values plus an empty
    # one to their left, since TensorBoard keeps only each bucket's right limit.
    if not values:
        raise ValueError("add_histogram: the values are empty; a histogram needs at least one value")
    finite = [v for v in values if math.isfinite(v)]
    if isinstance(bins, int):
        if bins < 1:
            raise ValueError(f"add_histogram: bins={bins}; give a positive number of buckets")
        low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
        if low == high:
            low, high = low - 0.5, high + 0.5
        width = (high - low) / bins
        limits = [low + i * width for i in range(bins)] + [high]
    else:
        limits = [float(v) for v in bins]
        if len(limits) < 2 or any(b <= a for a, b in zip(limits, limits[1:])):
            raise ValueError("add_histogram: bins must be at least two increasing bucket limits")
    counts = [0.0] * (len(limits) - 1)
    last = len(counts) - 1
    for v in finite:
        index = bisect.bisect_right(limits, v) - 1
        if index == len(counts) and v == limits[-1]:
            index = last
        if 0 <= index <= last:
            counts[index] += 1
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        counts += [0.0] * ((group - len(counts) % group) % group)
        counts = [sum(counts[i:i + group]) for i in range(0, len(counts), group)]
        limits = limits[:-1:group] + [limits[-1]]
    held = [i for i, count in enumerate(counts) if count > 0]
    if not held:
        raise ValueError(f"add_histogram: no value of {tag!r} lies within the bins ({limits[0]:g} to {limits[-1]:g}); "
                         "pass bins=<number of buckets> to fit them to the values")
    first, end = held[0], held[-1] + 1
    counts = counts[first - 1:end] if first > 0 else [0.0] + counts[:end]
    limits = limits[first:end + 1]
    histo = (_pb_double(1, min(values)) + _pb_double(2, max(values)) + _pb_double(3, float(len(values))) +
             _pb_double(4, math.fsum(values)) + _pb_double(5, math.fsum(v * v for v in values)) +
             _pb_packed_doubles(6, limits) + _pb_packed_doubles(7, counts))
    return _pb_bytes(1, tag) + _pb_bytes(5, histo)


def _png(width, height, channels, rows):
    # PNG by hand: 8-bit RGB (colour type 2) or RGBA (6), each row behind filter byte 0, one zlib IDAT chunk.
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 8, 2 if channels == 3 else 6, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\x00" + row for row in rows))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _nested_shape(data):
    shape = []
    while isinstance(data, (list, tuple)):
        shape.append(len(data))
        data = data[0] if data else None
    return shape


def _image_value(tag, img, dataformats):
    # As torch's add_image: uint8 values as they are, any other type scaled by 255 (floats in [0, 1]), clipped to
    # 0..255; one channel (or an HW/WH image) becomes grey RGB; 3 channels RGB, 4 RGBA.
    scale = 1 if "uint8" in str(getattr(img, "dtype", "")) else 255
    data = img.tolist() if hasattr(img, "tolist") else img
    shape, layout = _nested_shape(data), str(dataformats).upper()
    if len(layout) not in (2, 3) or len(set(layout)) != len(layout) or not set(layout) <= set("CHW") or \
            not {"H", "W"} <= set(layout) or len(shape) != len(layout):
        raise ValueError(f"add_image: dataformats={dataformats!r} for an image of shape {shape}: give one of CHW, HWC, "
                         "HW or WH matching the image's dimensions (a batch goes through torchvision's make_grid)")
    size = dict(zip(layout, shape))
    height, width, channels = size["H"], size["W"], size.get("C", 1)
    if channels not in (1, 3, 4) or not height or not width:
        raise ValueError(f"add_image: an image of {height}x{width} with {channels} channels; give 1, 3 or 4 channels")

    def at(h, w, c):
        where = {"H": h, "W": w, "C": c}
        item = data
        for letter in layout:
            item = item[where[letter]]
        value = float(item) * scale
        return 0 if not value > 0 else 255 if value >= 255 else int(value)

    rows = []
    for h in range(height):
        row = bytearray()
        for w in range(width):
            if channels == 1:
                row += bytes([at(h, w, 0)]) * 3
            else:
                row += bytes(at(h, w, c) for c in range(channels))
        rows.append(bytes(row))
    out_channels = 4 if channels == 4 else 3
    image = (_pb_varint(1, height) + _pb_varint(2, width) + _pb_varint(3, out_channels) +
             _pb_bytes(4, _png(width, height, out_channels, rows)))
    return _pb_bytes(1, tag) + _pb_bytes(4, image)


def _flat_numbers(values):
    # A list (nested or not), a numpy array or a torch tensor, without importing either: their flatten() and tolist().
    if hasattr(values, "flatten") and hasattr(values, "tolist"):
        values = values.flatten().tolist()
    elif hasattr(values, "tolist"):
        values = values.tolist()
    if not isinstance(values, (list, tuple)):
        return [float(values)]
    out, stack = [], [iter(values)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, (list, tuple)):
                stack.append(iter(item))
                break
            out.append(float(item.item() if hasattr(item, "item") else item))
        else:
            stack.pop()
    return out


def _number(value):
    return float(value.item() if hasattr(value, "item") else value)


class _EventFile:
    """One event file, only appended to: records wait in memory until max_queue of them, flush_secs, flush(), close()
    or the end of the script."""

    _serial = 0  # the <n> of the file name: two writers of one process in one second get two files

    def __init__(self, folder, suffix, max_queue, flush_secs):
        os.makedirs(folder, exist_ok=True)
        name = "events.out.tfevents.%d.%s.%d.%d%s" % (time.time(), socket.gethostname(), os.getpid(),
                                                      _EventFile._serial, suffix)
        _EventFile._serial += 1
        self.path = os.path.join(folder, name)
        self._file = open(self.path, "ab")
        self._pending = []
        self._max_queue, self._flush_secs = max(1, int(max_queue)), float(flush_secs)
        self._lock = threading.Lock()
        self._flushed = time.monotonic()
        self.add(_file_version_event(time.time()))
        self.flush()

    def add(self, event):
        with self._lock:
            self._pending.append(_tfrecord(event))
            if len(self._pending) < self._max_queue and time.monotonic() - self._flushed < self._flush_secs:
                return
        self.flush()

    def flush(self):
        with self._lock:
            if self._pending:
                self._file.write(b"".join(self._pending))
                self._pending = []
            self._file.flush()
            self._flushed = time.monotonic()

    def close(self):
        self.flush()
        self._file.close()


_writers = weakref.WeakSet()


@atexit.register
def _close_writers():
    for writer in list(_writers):
        writer.close()


class SummaryWriter:
    """torch.utils.tensorboard.SummaryWriter's everyday part, standard library only (no torch, numpy or tensorboard
    needed; their tensors and arrays are taken as they come): add_scalar, add_scalars, add_hparams, add_histogram,
    add_image, flush, close, get_logdir and `with SummaryWriter() as writer:`.

    Run by hand, it writes TensorBoard event files into log_dir (by default runs/<date>_<host><comment>, as torch
    does): events.out.tfevents.<time>.<host>.<pid>.<n>, appended to, flushed every max_queue events or flush_secs
    seconds, on flush(), close() and when the script ends. TensorBoard reads the folder, and TrainDeck's importer
    (backend/importers/tfevents.h) reads it as one run.

    Under a TrainDeck worker (TRAINDECK_METRICS_FD set) it speaks the metrics protocol instead (backend/api/METRICS.md):
    scalars are metric records at their global_step (a tag that is a key of the record itself — type, step, time,
    v, epoch — goes as "<tag>_value"; without a global_step a tag's values are numbered 1, 2, 3, …, since a metric
    record needs a step); add_hparams is a config record plus a metric record of its metrics. The protocol and the
    catalog have no record for histograms or images, so under a worker those still go to an event file in log_dir
    (said once on stderr, in the job's log); import that folder to see them.

    Differences from torch, on purpose: add_scalars keeps its curves in this run as "<main_tag>/<tag>" (torch writes
    a run folder per curve, log_dir/<main_tag>_<tag>, each with the tag main_tag, which TrainDeck would import as
    separate runs); add_hparams writes session_start_info into this run, its metrics at global_step or else at the
    highest step written so far (torch writes a sub-run log_dir/<run_name or time> with an experiment summary and a
    session_end_info; TensorBoard infers the experiment); histograms and bins: "tensorflow" (torch's default
    buckets), a number of equal buckets or the bucket limits — numpy's estimators ("auto", "fd", …) become 30 equal
    buckets; scalars are always simple_value (new_style and double_precision are accepted and ignored); purge_step is
    accepted and ignored.
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        if not log_dir:
            log_dir = os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_" + socket.gethostname() +
                                   comment)
        self.log_dir = log_dir
        self._max_queue, self._flush_secs, self._suffix = max_queue, flush_secs, filename_suffix
        self._protocol = bool(os.environ.get("TRAINDECK_METRICS_FD"))
        self._file = None
        self._numbered = {}  # under a worker: values written so far of each tag given no global_step
        self._last_step = 0
        self._start_time = time.time()
        _writers.add(self)
        if not self._protocol:
            self._event_file()  # as torch: the run folder and its file exist from the start

    def get_logdir(self):
        return self.log_dir

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        self._scalars({tag: _number(scalar_value)}, global_step, walltime, tag)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        values = {f"{main_tag}/{tag}": _number(value) for tag, value in tag_scalar_dict.items()}
        self._scalars(values, global_step, walltime, main_tag)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None):
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError("add_hparams: hparam_dict and metric_dict must be dicts")
        hparams = {str(key): (value.item() if hasattr(value, "item") else value)
                   for key, value in hparam_dict.items() if value is not None}
        step = int(_number(global_step)) if global_step is not None else self._last_step
        if self._protocol:
            config(hparams)
        else:
            self._event_file().add(_event(time.time(), 0, [_hparams_value(hparams, self._start_time)]))
        if metric_dict:
            self._scalars({str(key): _number(value) for key, value in metric_dict.items()}, step, None, None)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        if isinstance(bins, str):
            bins = _DEFAULT_BINS if bins == "tensorflow" else 30
        value = _histogram_value(tag, _flat_numbers(values), bins, max_bins)
        self._event_file().add(_event(self._time(walltime), self._step(global_step), [value]))

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        value = _image_value(tag, img_tensor, dataformats)
        self._event_file().add(_event(self._time(walltime), self._step(global_step), [value]))

    def flush(self):
        if self._file:
            self._file.flush()

    def close(self):
        if self._file:
            self._file.close()
            self._file = None
        _writers.discard(self)

    def _time(self, walltime):
        return time.time() if walltime is None else float(walltime)

    def _step(self, global_step):
        step = 0 if global_step is None else int(_number(global_step))
        self._last_step = max(self._last_step, step)
        return step

    def _scalars(self, values, global_step, walltime, numbered_as):
        if not self._protocol:
            step = self._step(global_step)
            self._event_file().add(_event(self._time(walltime), step,
                                          [_scalar_value(tag, value) for tag, value in values.items()]))
            return
        if global_step is None and numbered_as is not None:
            step = self._numbered[numbered_as] = self._numbered.get(numbered_as, 0) + 1
            self._last_step = max(self._last_step, step)
        else:
            step = self._step(global_step)
        record = {"type": "metric", "step": step}
        for tag, value in values.items():
            record[tag + "_value" if tag in _RECORD_KEYS else tag] = value
        if walltime is not None:
            record["time"] = float(walltime)
        write(record)

    def _event_file(self):
        if self._file is None:
            self._file = _EventFile(self.log_dir, self._suffix, self._max_queue, self._flush_secs)
            _writers.add(self)
            if self._protocol:
                print(f"traindeck: SummaryWriter: histograms and images go to {os.path.abspath(self._file.path)} "
                      "(the metrics protocol has no record for them); import that folder to see them", file=sys.stderr)
        return self._file


_RECORD_KEYS = {"type", "step", "time", "v", "epoch"}


def _default_bins():
    # torch's "tensorflow" buckets: ±1e-12 growing by 10 % to ±1e20, and 0.
    v, buckets = 1e-12, []
    while v < 1e20:
        buckets.append(v)
        v *= 1.1
    return [-b for b in reversed(buckets)] + [0] + buckets


_DEFAULT_BINS = _default_bins()
